import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { parseAwsCredentials } from "./aws-credentials.ts";

const SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

describe("parseAwsCredentials", () => {
  it("reads one JSON object", () => {
    expect(
      parseAwsCredentials(
        JSON.stringify({ access_key_id: "AKIDEXAMPLE12345", secret_access_key: SECRET, region: "eu-west-1" }),
      ),
    ).toEqual({ access_key_id: "AKIDEXAMPLE12345", secret_access_key: SECRET, region: "eu-west-1" });
  });

  it("reads KEY=value lines as `aws configure export-credentials --format env` prints them", () => {
    const text = `# from aws\nexport AWS_ACCESS_KEY_ID=ASIAEXAMPLE12345\nexport AWS_SECRET_ACCESS_KEY="${SECRET}"\nAWS_SESSION_TOKEN=FwoGZXIvYXdzEXAMPLE//token==\n\nAWS_DEFAULT_REGION=us-west-2\n`;
    expect(parseAwsCredentials(text)).toEqual({
      access_key_id: "ASIAEXAMPLE12345",
      secret_access_key: SECRET,
      session_token: "FwoGZXIvYXdzEXAMPLE//token==",
      region: "us-west-2",
    });
  });

  it("reads `aws configure export-credentials --format process` JSON", () => {
    const text = JSON.stringify({
      Version: 1,
      AccessKeyId: "ASIAEXAMPLE12345",
      SecretAccessKey: SECRET,
      SessionToken: "token",
      Expiration: "2026-11-23T18:00:00+00:00",
    });
    expect(parseAwsCredentials(text)).toEqual({
      access_key_id: "ASIAEXAMPLE12345",
      secret_access_key: SECRET,
      session_token: "token",
    });
  });

  it.each([
    ["", "empty"],
    ["AWS_ACCESS_KEY_ID=AKIDEXAMPLE12345", "both required"],
    [`AWS_ACCESS_KEY_ID=akid\nAWS_SECRET_ACCESS_KEY=${SECRET}`, "does not look like an access key id"],
    [`AWS_ACCESS_KEY_ID=AKIDEXAMPLE12345\nAWS_SECRET_ACCESS_KEY=${SECRET}\nAWS_REGION=mars`, "not a region"],
    [
      `AWS_ACCESS_KEY_ID=AKIDEXAMPLE12345\nAWS_SECRET_ACCESS_KEY=${SECRET}\nPASSWORD=x`,
      "unknown field PASSWORD",
    ],
    [`{"access_key_id": "AKIDEXAMPLE12345", "secret_access_key": 4}`, "must be a string"],
    [`AKIDEXAMPLE12345 ${SECRET}`, "not KEY=value"],
  ])("refuses %j (%s) without echoing the secret", (text, reason) => {
    let error: unknown;
    try {
      parseAwsCredentials(text);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toContain(reason);
    expect((error as Error).message).not.toContain(SECRET);
  });
});
