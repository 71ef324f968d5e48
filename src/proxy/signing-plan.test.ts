import { describe, expect, it } from "vitest";
import type { SignedRequest, SignRequest } from "../api/credentials.ts";
import type { InterceptedRequest, RequestPlan } from "./server.ts";
import { signingPlan } from "./signing-plan.ts";

const HASH = "a".repeat(64);

function planFor(request: Partial<InterceptedRequest> & Pick<InterceptedRequest, "host">) {
  const asked: SignRequest[] = [];
  const plan = signingPlan({
    request: { method: "POST", port: 443, path: "/", headers: {}, ...request },
    authority: request.host,
    provider: "aws",
    connection: undefined,
    sign: async (signing) => {
      asked.push(signing);
      return {
        provider: "aws",
        connection: "default",
        service: "s3",
        region: "us-east-1",
        headers: {
          authorization: "AWS4-HMAC-SHA256 real",
          "x-amz-date": "20260101T000000Z",
          "x-amz-security-token": "tok",
        },
        expires_at: "2026-01-01T00:15:00Z",
      } satisfies SignedRequest;
    },
    refuse: (failure) => ({ kind: "respond", failure }),
    failed: () => ({ kind: "respond", failure: { status: 502, code: "Failed", message: "failed" } }),
    done: () => undefined,
  });
  if (plan.kind !== "hash-body") throw new Error("expected a hash-body plan");
  return { plan, asked };
}

describe("signingPlan", () => {
  it("signs the wire path and raw query with the body's hash, replacing the child's signature", async () => {
    const { plan, asked } = planFor({
      host: "dynamodb.eu-west-1.amazonaws.com",
      path: "/caf%C3%A9?b=2&a=1",
      headers: {
        authorization: "AWS4-HMAC-SHA256 placeholder",
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "DynamoDB_20120810.ListTables",
        "user-agent": "sdk",
      },
    });
    const settled = (await plan.withHash(HASH)) as Extract<RequestPlan, { kind: "forward" }>;
    expect(asked).toEqual([
      {
        host: "dynamodb.eu-west-1.amazonaws.com",
        method: "POST",
        path: "/caf%C3%A9",
        query: "b=2&a=1",
        headers: {
          "content-type": "application/x-amz-json-1.0",
          "x-amz-target": "DynamoDB_20120810.ListTables",
        },
        payload_sha256: HASH,
        provider: "aws",
      },
    ]);
    expect(settled.setHeaders).toMatchObject({
      authorization: "AWS4-HMAC-SHA256 real",
      host: "dynamodb.eu-west-1.amazonaws.com",
    });
    expect(settled.removeHeaders).toEqual([
      "authorization",
      "x-amz-date",
      "x-amz-security-token",
      "x-amz-content-sha256",
    ]);
    expect(settled.secrets).toEqual(["tok"]);
  });

  it("sends an over-limit body UNSIGNED-PAYLOAD to S3 and refuses it with 413 elsewhere", async () => {
    const s3 = planFor({ host: "bucket.s3.us-east-1.amazonaws.com" });
    await s3.plan.withHash(undefined);
    expect(s3.asked[0]?.payload_sha256).toBe("UNSIGNED-PAYLOAD");
    const bedrock = planFor({ host: "bedrock-runtime.us-east-1.amazonaws.com" });
    expect(await bedrock.plan.withHash(undefined)).toMatchObject({
      kind: "respond",
      failure: { status: 413, code: "RequestBodyTooLarge" },
    });
    expect(bedrock.asked).toEqual([]);
  });
});
