/**
 * The library's `fetch` against AWS: the daemon signs each request (SigV4), the program never
 * holds the secret, and a local upstream checks the signatures as AWS does.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateClientConfig } from "../../src/client/config.ts";
import { createClient, type SvcClient } from "../../src/client/index.ts";
import { OperationNotAllowedError } from "../../src/core/errors.ts";
import { type AwsUpstream, startAwsUpstream } from "../support/aws-upstream.ts";
import { connectToFetch } from "../support/connect-fetch.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const SCOPES: Record<string, { service: string; region: string }> = {
  "bedrock-runtime.eu-west-3.amazonaws.com": { service: "bedrock", region: "eu-west-3" },
  "lib-bucket.s3.eu-west-3.amazonaws.com": { service: "s3", region: "eu-west-3" },
};
const keys = {
  accessKeyId: `AKIA${randomBytes(8).toString("hex").toUpperCase()}`,
  secretAccessKey: randomBytes(30).toString("base64"),
};

describe("svc.fetch with an aws_sigv4 provider", () => {
  let t: TestDaemon;
  let upstream: AwsUpstream;
  let svc: SvcClient;

  beforeAll(async () => {
    [t, upstream] = await Promise.all([startTestDaemon(), startAwsUpstream(keys, (host) => SCOPES[host]!)]);
    updateClientConfig(t.layout.clientConfig, { active_identity: t.identity.handle });
    await loginWithApiKey(
      t.client,
      "aws",
      `AWS_ACCESS_KEY_ID=${keys.accessKeyId}\nAWS_SECRET_ACCESS_KEY=${keys.secretAccessKey}\n`,
    );
    svc = createClient({
      env: { SVC_HOME: t.layout.home, SVC_BASE_URL: t.daemon.url },
      fetch: connectToFetch(upstream.connectTo(Object.keys(SCOPES)), readFileSync(upstream.caPath, "utf8")),
    });
  });
  afterAll(async () => {
    await Promise.all([t?.stop(), upstream?.close()]);
  });

  it("has the daemon sign a Bedrock call, body included", async () => {
    const response = await svc.fetch(
      "https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-v2%3A1/invoke",
      {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "AWS4-HMAC-SHA256 stale" },
        body: JSON.stringify({ prompt: "ünïcode" }),
      },
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ completion: "echo: ünïcode", stop_reason: "end_turn" });
    expect(upstream.requests.at(-1)).toMatchObject({ valid: true, service: "bedrock", region: "eu-west-3" });
  });

  it("puts and gets an S3 object with a query string and a unicode key", async () => {
    const url = "https://lib-bucket.s3.eu-west-3.amazonaws.com/caf%C3%A9/menu.txt?x-id=PutObject";
    const put = await svc.fetch(url, { method: "PUT", body: "crème brûlée" });
    expect(put.status).toBe(200);
    const got = await svc.fetch("https://lib-bucket.s3.eu-west-3.amazonaws.com/caf%C3%A9/menu.txt");
    expect(await got.text()).toBe("crème brûlée");
    expect(upstream.requests.slice(-2).map((request) => request.valid)).toEqual([true, true]);
  });

  it("headers() and headersFor() explain that a signed provider needs the request", async () => {
    const byUrl = await svc.headersFor("https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/invoke").then(
      () => expect.unreachable("headersFor should have been refused"),
      (error: unknown) => error as Error,
    );
    expect(byUrl).toBeInstanceOf(OperationNotAllowedError);
    expect(byUrl.message).toContain("svc.fetch");
    const byName = await svc.headers("aws").then(
      () => expect.unreachable("headers should have been refused"),
      (error: unknown) => error as Error,
    );
    expect(byName).toBeInstanceOf(OperationNotAllowedError);
    expect(byName.message).toContain("fetch");
    expect(byName.message).not.toContain(keys.secretAccessKey);
  });
});
