/**
 * `POST /api/credentials/sign`: the daemon signs AWS requests with the stored secret access key,
 * which never leaves it. Signatures are checked with AWS's own signer (@smithy/signature-v4).
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Sha256 } from "@aws-crypto/sha256-js";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Connection } from "../../src/api/connections.ts";
import type { SignedRequest, SignRequest } from "../../src/api/credentials.ts";
import { InvalidInputError, OperationNotAllowedError } from "../../src/core/errors.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const ACCESS_KEY_ID = `AKIA${randomBytes(8).toString("hex").toUpperCase()}`;
const SECRET = randomBytes(30).toString("base64");
const OPENAI_KEY = `sk-${randomBytes(16).toString("hex")}`;

/** What AWS computes for the request the daemon signed, with the real secret. */
async function awsSignature(request: SignRequest, signed: SignedRequest, body: string): Promise<string> {
  const s3 = signed.service === "s3";
  const signer = new SignatureV4({
    credentials: { accessKeyId: ACCESS_KEY_ID, secretAccessKey: SECRET },
    region: signed.region,
    service: signed.service,
    sha256: Sha256,
    uriEscapePath: !s3,
    applyChecksum: false,
  });
  const query = Object.fromEntries(
    (request.query ?? "")
      .split("&")
      .filter(Boolean)
      .map((pair) => pair.split("=").map(decodeURIComponent) as [string, string]),
  );
  const date = signed.headers["x-amz-date"]!;
  const result = await signer.sign(
    new HttpRequest({
      method: request.method,
      protocol: "https:",
      hostname: request.host,
      path: request.path ?? "/",
      query,
      headers: {
        host: request.host,
        ...request.headers,
        ...(s3 ? { "x-amz-content-sha256": signed.headers["x-amz-content-sha256"]! } : {}),
      },
      body,
    }),
    {
      signingDate: new Date(
        `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
      ),
    },
  );
  return String(result.headers.authorization);
}

describe("POST /api/credentials/sign", () => {
  let t: TestDaemon;
  const sign = (request: SignRequest) => t.client.post<SignedRequest>("/api/credentials/sign", request);
  const refusal = (request: SignRequest) =>
    sign(request).then(
      () => expect.unreachable("signing should have been refused"),
      (error: unknown) => error as Error,
    );

  beforeAll(async () => {
    t = await startTestDaemon();
    await loginWithApiKey(
      t.client,
      "aws",
      JSON.stringify({ access_key_id: ACCESS_KEY_ID, secret_access_key: SECRET, region: "eu-west-1" }),
    );
    await loginWithApiKey(t.client, "openai", OPENAI_KEY);
  });
  afterAll(async () => {
    await t.stop();
  });

  it("signs a Bedrock request as AWS would, service and region read from the host", async () => {
    const body = JSON.stringify({ prompt: "héllo" });
    const request: SignRequest = {
      host: "bedrock-runtime.us-east-1.amazonaws.com",
      method: "POST",
      path: "/model/anthropic.claude-v2%3A1/invoke",
      query: "",
      headers: { "content-type": "application/json", authorization: "ignored", "x-amz-date": "ignored" },
      payload_sha256: createHash("sha256").update(body).digest("hex"),
    };
    const signed = await sign(request);
    expect(signed).toMatchObject({
      provider: "aws",
      connection: "default",
      service: "bedrock",
      region: "us-east-1",
    });
    expect(Object.keys(signed.headers).sort()).toEqual(["authorization", "x-amz-date"]);
    const { authorization: _ignored, "x-amz-date": _alsoIgnored, ...signedHeaders } = request.headers!;
    expect(signed.headers.authorization).toBe(
      await awsSignature({ ...request, headers: signedHeaders }, signed, body),
    );
    expect(signed.headers.authorization).toContain(`Credential=${ACCESS_KEY_ID}/`);
    expect(JSON.stringify(signed)).not.toContain(SECRET);
  });

  it("signs S3 with the payload hash header, the key encoded once, and UNSIGNED-PAYLOAD", async () => {
    const request: SignRequest = {
      host: "my.bucket.s3.us-west-2.amazonaws.com",
      method: "PUT",
      path: "/d%C3%A9j%C3%A0/vu%20x.txt",
      query: "x-id=PutObject",
      headers: { "x-amz-meta-note": "a  b" },
      payload_sha256: "UNSIGNED-PAYLOAD",
    };
    const signed = await sign(request);
    expect(signed).toMatchObject({ service: "s3", region: "us-west-2" });
    expect(signed.headers["x-amz-content-sha256"]).toBe("UNSIGNED-PAYLOAD");
    expect(signed.headers.authorization).toBe(await awsSignature(request, signed, ""));
  });

  it("refuses UNSIGNED-PAYLOAD where the service needs the hash", async () => {
    const error = await refusal({
      host: "bedrock-runtime.us-east-1.amazonaws.com",
      method: "POST",
      path: "/model/m/invoke",
      payload_sha256: "UNSIGNED-PAYLOAD",
    });
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toContain("bedrock does not accept UNSIGNED-PAYLOAD");
  });

  it("never signs for a host the provider does not route, nor for a header provider", async () => {
    const elsewhere = await refusal({
      host: "api.openai.com",
      method: "GET",
      path: "/v1/models",
      payload_sha256: createHash("sha256").digest("hex"),
      provider: "aws",
    });
    expect(elsewhere).toBeInstanceOf(OperationNotAllowedError);
    expect(elsewhere.message).toContain("is not an API URL of aws");
    const openai = await refusal({
      host: "api.openai.com",
      method: "GET",
      path: "/v1/models",
      payload_sha256: createHash("sha256").digest("hex"),
    });
    expect(openai).toBeInstanceOf(OperationNotAllowedError);
    expect(openai.message).toContain("not a request-signing provider");
  });

  it("has no header to resolve for a signing provider, and says where to go", async () => {
    const error = await t.client.post("/api/credentials/resolve", { provider: "aws" }).then(
      () => expect.unreachable("resolve should have been refused"),
      (raw: unknown) => raw as Error,
    );
    expect(error).toBeInstanceOf(OperationNotAllowedError);
    expect(error.message).toContain("svc run");
    expect(error.message).not.toContain(SECRET);
  });

  it("shows the connection with the key id and the secret redacted", async () => {
    const connections = await t.client.get<Connection[]>("/api/connections?provider=aws");
    expect(connections).toHaveLength(1);
    expect(connections[0]).toMatchObject({
      auth_type: "aws_sigv4",
      flow: "api_key",
      credential: {
        type: "aws_sigv4",
        access_key_id: ACCESS_KEY_ID,
        has_session_token: false,
        region: "eu-west-1",
      },
    });
    expect(JSON.stringify(connections)).not.toContain(SECRET);
    const routes = await t.client.get<{ routes: { provider: string; regions?: Record<string, string> }[] }>(
      "/api/proxy/routes",
    );
    expect(routes.routes.find((route) => route.provider === "aws")?.regions).toEqual({
      default: "eu-west-1",
    });
  });

  it("refuses malformed credentials at login and keeps what was stored", async () => {
    const error = await loginWithApiKey(t.client, "aws", `AWS_ACCESS_KEY_ID=${ACCESS_KEY_ID}\n`, {
      connection: "broken",
    }).then(
      () => expect.unreachable("the login should have been refused"),
      (raw: unknown) => raw as Error,
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toContain("AWS_SECRET_ACCESS_KEY");
    const connections = await t.client.get<Connection[]>("/api/connections?provider=aws");
    expect(connections.map((connection) => connection.connection)).toEqual(["default"]);
  });

  it("is described in the OpenAPI document", async () => {
    const response = await fetch(`${t.daemon.url}/openapi.json`);
    const document = (await response.json()) as { paths: Record<string, { post?: { summary?: string } }> };
    expect(document.paths["/api/credentials/sign"]?.post?.summary).toContain("Signature Version 4");
  });

  it("keeps the secret out of the audit log", () => {
    expect(readFileSync(t.layout.auditLog, "utf8")).not.toContain(SECRET);
  });
});
