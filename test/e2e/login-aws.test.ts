/**
 * `svc login aws`: the access key pair from a terminal's prompts (secrets masked), from stdin (JSON
 * or KEY=value lines) or from the bridge form; never from arguments, never echoed.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Connection } from "../../src/api/connections.ts";
import { runInProcess, SvcSandbox, submitApiKeyPage } from "../support/cli.ts";

const LINK = /(http:\/\/127\.0\.0\.1:\d+\/\S+)/;
const keyId = () => `AKIA${randomBytes(8).toString("hex").toUpperCase()}`;
const secret = () => randomBytes(30).toString("base64");

describe("svc login for aws_sigv4 providers", () => {
  let sandbox: SvcSandbox;
  const stored = (provider: string, connection: string) =>
    sandbox.json<Connection>(["connections", "inspect", provider, "--connection", connection]);

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("takes one JSON object on stdin", async () => {
    const id = keyId();
    const key = secret();
    const result = await sandbox.run(["login", "bedrock", "--connection", "json"], {
      input: JSON.stringify({ AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: key, AWS_REGION: "us-east-1" }),
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).not.toContain(key);
    expect((await stored("bedrock", "json")).credential).toMatchObject({
      type: "aws_sigv4",
      access_key_id: id,
      region: "us-east-1",
    });
  });

  it("refuses incomplete credentials on stdin (exit 2) without echoing them", async () => {
    const key = secret();
    const result = await sandbox.run(["login", "s3", "--connection", "partial"], {
      input: `AWS_SECRET_ACCESS_KEY=${key}\n`,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are both required");
    expect(result.stdout + result.stderr).not.toContain(key);
  });

  it("asks field by field on a terminal, the secrets masked", async () => {
    const id = keyId();
    const key = secret();
    const token = secret();
    const result = await runInProcess(sandbox, ["login", "aws", "--connection", "tty"], {
      answers: [id, key, "eu-west-1", true, token],
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.asked).toEqual([
      "AWS access key id (AKIA... or ASIA...)",
      "AWS secret access key",
      "Default region, given to programs as AWS_REGION (empty for none)",
      "Temporary credentials (with a session token)?",
      "AWS session token",
    ]);
    expect(result.stdout + result.stderr).not.toContain(key);
    expect((await stored("aws", "tty")).credential).toMatchObject({
      access_key_id: id,
      has_session_token: true,
      region: "eu-west-1",
    });
  });

  it("takes KEY=value lines in the bridge form", async () => {
    const cli = sandbox.start(["login", "s3", "--connection", "browser", "--browser"]);
    const [, url] = await cli.waitFor("stderr", LINK);
    const page = await fetch(url!).then((response) => response.text());
    expect(page).toContain("<textarea");
    const id = keyId();
    const key = secret();
    const refused = await submitApiKeyPage(url!, `AWS_ACCESS_KEY_ID=${id}\nAWS_REGION=moon-1`);
    expect(refused.status).toBe(400);
    const accepted = await submitApiKeyPage(
      url!,
      `AWS_ACCESS_KEY_ID=${id}\r\nAWS_SECRET_ACCESS_KEY=${key}\r\n`,
    );
    expect(accepted.status).toBe(200);
    const result = await cli.result;
    expect(result.code, result.stderr).toBe(0);
    expect((await stored("s3", "browser")).credential).toMatchObject({ access_key_id: id, region: null });
  });
});
