/**
 * `POST /api/credentials/sign`: AWS requests are signed by the daemon (SigV4), which keeps the
 * secret access key. The proxy and the library send the request's canonical parts and payload
 * hash, and set the headers they get back.
 */
import type { SignedRequest, SignRequest } from "../api/credentials.ts";
import type { DaemonClient } from "./daemon-client.ts";

/** Set by the daemon's signature; a client's own (made with placeholder keys) are dropped. */
export const SIGNATURE_HEADERS: readonly string[] = [
  "authorization",
  "x-amz-date",
  "x-amz-security-token",
  "x-amz-content-sha256",
];

/** Bodies up to this size are hashed in memory to be signed (Bedrock requests with images fit). */
export const SIGNED_BODY_LIMIT = 32 * 1024 * 1024;

/** The payload hash of an aws-chunked body without chunk signatures: S3 takes it as is. */
export const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

/**
 * The headers worth signing: content-type, content-md5 and every `x-amz-*` header (S3 refuses
 * requests with unsigned `x-amz-*` headers). `host` is the daemon's to sign; the daemon's own
 * signature headers are left out.
 */
export function headersToSign(headers: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [raw, value] of headers) {
    const name = raw.toLowerCase();
    if (SIGNATURE_HEADERS.includes(name)) continue;
    if (name === "content-type" || name === "content-md5" || name.startsWith("x-amz-")) out[name] = value;
  }
  return out;
}

/** The sign request for a request as it will be sent: its wire path and raw query, split at `?`. */
export function signRequestFor(
  request: { method: string; host: string; target: string; headers: Iterable<[string, string]> },
  payloadSha256: string,
  provider: string,
  connection?: string,
): SignRequest {
  const question = request.target.indexOf("?");
  return {
    host: request.host,
    method: request.method.toUpperCase(),
    path: question === -1 ? request.target : request.target.slice(0, question),
    query: question === -1 ? "" : request.target.slice(question + 1),
    headers: headersToSign(request.headers),
    payload_sha256: payloadSha256,
    provider,
    ...(connection ? { connection } : {}),
  };
}

export function signRequest(client: DaemonClient, request: SignRequest): Promise<SignedRequest> {
  // Each proxied request is audited already; a debug-log line each would be a file write each.
  return client.post<SignedRequest>("/api/credentials/sign", request, { trace: false });
}
