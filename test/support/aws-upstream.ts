/**
 * A local HTTPS stand-in for AWS that checks every request's Signature Version 4 the way AWS
 * does: it recomputes the signature from what arrived (method, path, query, the signed headers,
 * the body or the declared payload hash) with the real secret, using AWS's own signer
 * (@smithy/signature-v4, what the AWS SDKs sign with), and refuses a mismatch with 403. Behind
 * the check, tiny fakes of Bedrock (InvokeModel, Converse) and S3 (PutObject, GetObject) answer.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { crc32 } from "node:zlib";
import { Sha256 } from "@aws-crypto/sha256-js";
import { HttpRequest } from "@smithy/protocol-http";
import { SignatureV4 } from "@smithy/signature-v4";
import { startLocalHttpsHost } from "./https-host.ts";

export interface AwsKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface VerifiedRequest {
  host: string;
  method: string;
  /** Path and query as sent. */
  url: string;
  service: string | undefined;
  region: string | undefined;
  /** Whether the signature was AWS-valid. */
  valid: boolean;
  reason?: string;
  signedHeaders: string[];
  payloadHash: string | undefined;
  bodyBytes: number;
  headers: IncomingMessage["headers"];
}

export interface AwsUpstream {
  port: number;
  caPath: string;
  connectTo(hosts: readonly string[]): string;
  requests: VerifiedRequest[];
  close(): Promise<void>;
}

/** Where each test host signs: the test states it, the server checks the scope against it. */
export type ScopeOf = (host: string) => { service: string; region: string };

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const SKEW_MS = 15 * 60_000;

function parseAmzDate(value: string): Date | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match;
  return new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}Z`);
}

/** The raw query as smithy wants it: decoded keys and values (no `+` for space: AWS encodes %20). */
function parseQuery(raw: string): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const pair of raw.split("&").filter(Boolean)) {
    const equals = pair.indexOf("=");
    const key = decodeURIComponent(equals === -1 ? pair : pair.slice(0, equals));
    const value = equals === -1 ? "" : decodeURIComponent(pair.slice(equals + 1));
    const existing = query[key];
    query[key] =
      existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  return query;
}

async function verify(
  request: IncomingMessage,
  body: Buffer,
  keys: AwsKeys,
  scopeOf: ScopeOf,
): Promise<Omit<VerifiedRequest, "host" | "method" | "url" | "bodyBytes" | "headers">> {
  const host = String(request.headers.host ?? "");
  const expected = scopeOf(host.replace(/:443$/, ""));
  const fail = (reason: string, signedHeaders: string[] = []) => ({
    service: expected.service,
    region: expected.region,
    valid: false,
    reason,
    signedHeaders,
    payloadHash: request.headers["x-amz-content-sha256"] as string | undefined,
  });
  const match = AUTHORIZATION.exec(String(request.headers.authorization ?? ""));
  if (!match) return fail("MissingAuthenticationToken");
  const [, accessKeyId, day, region, service, signedList, signature] = match as unknown as string[];
  const signedHeaders = signedList!.split(";");
  if (accessKeyId !== keys.accessKeyId) return fail("InvalidClientTokenId", signedHeaders);
  if (region !== expected.region || service !== expected.service) {
    return fail(
      `credential scope ${region}/${service} should be ${expected.region}/${expected.service}`,
      signedHeaders,
    );
  }
  const date = parseAmzDate(String(request.headers["x-amz-date"] ?? ""));
  if (!date || day !== String(request.headers["x-amz-date"]).slice(0, 8))
    return fail("IncompleteSignature", signedHeaders);
  if (Math.abs(date.getTime() - Date.now()) > SKEW_MS) return fail("RequestTimeTooSkewed", signedHeaders);
  if (!signedHeaders.includes("host") || !signedHeaders.includes("x-amz-date"))
    return fail("host and x-amz-date must be signed", signedHeaders);
  if (keys.sessionToken !== undefined) {
    if (request.headers["x-amz-security-token"] !== keys.sessionToken)
      return fail("InvalidToken", signedHeaders);
    if (!signedHeaders.includes("x-amz-security-token"))
      return fail("x-amz-security-token must be signed", signedHeaders);
  }
  const declared = request.headers["x-amz-content-sha256"] as string | undefined;
  if (service === "s3") {
    // S3 wants the hash declared, checks it against the body, and wants every x-amz-* header signed.
    if (!declared) return fail("MissingContentSHA256", signedHeaders);
    if (/^[0-9a-f]{64}$/.test(declared) && createHash("sha256").update(body).digest("hex") !== declared)
      return fail("XAmzContentSHA256Mismatch", signedHeaders);
    const unsigned = Object.keys(request.headers).filter(
      (name) => name.startsWith("x-amz-") && !signedHeaders.includes(name),
    );
    if (unsigned.length > 0) return fail(`unsigned x-amz headers: ${unsigned.join(", ")}`, signedHeaders);
  }
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) {
    const value = request.headers[name];
    if (value === undefined) return fail(`signed header ${name} is missing`, signedHeaders);
    headers[name] = Array.isArray(value) ? value.join(",") : value;
  }
  const target = request.url ?? "/";
  const question = target.indexOf("?");
  const signer = new SignatureV4({
    credentials: keys,
    region: region!,
    service: service!,
    sha256: Sha256,
    uriEscapePath: service !== "s3",
    applyChecksum: false,
  });
  const recomputed = await signer.sign(
    new HttpRequest({
      method: request.method ?? "GET",
      protocol: "https:",
      hostname: host,
      path: question === -1 ? target : target.slice(0, question),
      query: question === -1 ? {} : parseQuery(target.slice(question + 1)),
      headers,
      body,
    }),
    { signingDate: date, signingRegion: region!, signingService: service! },
  );
  const theirs = Buffer.from(signature!, "hex");
  const ours = Buffer.from(
    /Signature=([0-9a-f]{64})/.exec(String(recomputed.headers.authorization))![1]!,
    "hex",
  );
  const same = theirs.length === ours.length && timingSafeEqual(theirs, ours);
  return {
    service,
    region,
    valid: same,
    ...(same ? {} : { reason: "SignatureDoesNotMatch" }),
    signedHeaders,
    payloadHash: declared,
  };
}

/**
 * The object S3 stores from an `aws-chunked` upload (what boto3 and the JavaScript SDK send by
 * default, with a CRC32 trailer): the chunks' data, after checking the trailer's checksum as S3
 * does. Refused uploads throw.
 */
function decodeAwsChunked(body: Buffer): Buffer {
  const chunks: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = body.indexOf("\r\n", at);
    if (lineEnd < 0) throw new Error("aws-chunked: a chunk header without its line end");
    const size = Number.parseInt(body.subarray(at, lineEnd).toString("latin1").split(";")[0]!, 16);
    if (!Number.isInteger(size) || size < 0) throw new Error("aws-chunked: a malformed chunk size");
    at = lineEnd + 2;
    if (size === 0) break;
    chunks.push(body.subarray(at, at + size));
    at += size + 2;
  }
  const data = Buffer.concat(chunks);
  const trailers = body.subarray(at).toString("latin1").split("\r\n").filter(Boolean);
  for (const trailer of trailers) {
    const [name, value] = trailer.split(":", 2).map((part) => part.trim());
    if (name?.toLowerCase() !== "x-amz-checksum-crc32") continue;
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(data));
    if (crc.toString("base64") !== value) throw new Error("aws-chunked: the CRC32 trailer does not match");
  }
  return data;
}

/** The fakes behind the signature check. */
function answer(
  request: IncomingMessage,
  response: ServerResponse,
  body: Buffer,
  service: string | undefined,
  objects: Map<string, Buffer>,
): void {
  const url = new URL(request.url ?? "/", "https://aws.invalid");
  const json = (status: number, value: unknown) => {
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify(value));
  };
  if (service === "bedrock" && url.pathname.endsWith("/invoke")) {
    const prompt = JSON.parse(body.toString("utf8") || "{}") as { prompt?: string };
    json(200, { completion: `echo: ${prompt.prompt ?? ""}`, stop_reason: "end_turn" });
    return;
  }
  if (service === "bedrock" && url.pathname.endsWith("/converse")) {
    const input = JSON.parse(body.toString("utf8")) as { messages: { content: { text: string }[] }[] };
    json(200, {
      output: {
        message: { role: "assistant", content: [{ text: `echo: ${input.messages[0]?.content[0]?.text}` }] },
      },
      stopReason: "end_turn",
      usage: { inputTokens: 3, outputTokens: 3, totalTokens: 6 },
      metrics: { latencyMs: 1 },
    });
    return;
  }
  if (service === "s3") {
    const key = `${request.headers.host}${url.pathname}`;
    if (request.method === "PUT") {
      const chunked = String(request.headers["content-encoding"] ?? "").includes("aws-chunked");
      let object = body;
      if (chunked) {
        try {
          object = decodeAwsChunked(body);
        } catch (error) {
          response.writeHead(400, { "content-type": "application/xml" });
          response.end(
            `<Error><Code>InvalidRequest</Code><Message>${(error as Error).message}</Message></Error>`,
          );
          return;
        }
      }
      objects.set(key, object);
      response.writeHead(200, { etag: `"${createHash("md5").update(object).digest("hex")}"` });
      response.end();
      return;
    }
    const object = objects.get(key);
    if (request.method === "GET" && object) {
      response.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": object.length,
        etag: `"${createHash("md5").update(object).digest("hex")}"`,
        "last-modified": new Date().toUTCString(),
      });
      response.end(object);
      return;
    }
    response.writeHead(404, { "content-type": "application/xml" });
    response.end("<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>");
    return;
  }
  json(200, {
    ok: true,
    method: request.method,
    url: request.url,
    body_sha256: createHash("sha256").update(body).digest("hex"),
    body_bytes: body.length,
  });
}

export async function startAwsUpstream(keys: AwsKeys, scopeOf: ScopeOf): Promise<AwsUpstream> {
  const requests: VerifiedRequest[] = [];
  const objects = new Map<string, Buffer>();
  const host = await startLocalHttpsHost((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      verify(request, body, keys, scopeOf).then(
        (result) => {
          requests.push({
            host: String(request.headers.host ?? ""),
            method: request.method ?? "GET",
            url: request.url ?? "/",
            bodyBytes: body.length,
            headers: { ...request.headers },
            ...result,
          });
          if (!result.valid) {
            response.writeHead(403, {
              "content-type": "application/json",
              "x-amzn-errortype": "SignatureDoesNotMatch",
            });
            response.end(JSON.stringify({ message: `signature refused: ${result.reason}` }));
            return;
          }
          answer(request, response, body, result.service, objects);
        },
        (error: Error) => {
          response.writeHead(500);
          response.end(error.message);
        },
      );
    });
  });
  return {
    port: host.port,
    caPath: host.caPath,
    connectTo: host.connectTo,
    requests,
    close: host.close,
  };
}
