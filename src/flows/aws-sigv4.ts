/**
 * AWS Signature Version 4 (header form), computed with node:crypto. The daemon signs with the
 * stored secret; callers hand in the request's canonical parts and the payload's SHA-256, never
 * the body. Pinned by AWS's published test suite (test/fixtures/aws-sigv4-test-suite).
 *
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
 */
import { createHash, createHmac } from "node:crypto";

export const SIGV4_ALGORITHM = "AWS4-HMAC-SHA256";
/** The payload hash S3 accepts instead of a digest of the body. */
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
/** SHA-256 of the empty string: the payload hash of a request without a body. */
export const EMPTY_PAYLOAD_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface SigV4Request {
  method: string;
  /** The path as sent on the wire (percent-encoded), without the query. */
  path: string;
  /** The raw query string, without `?` ("" when there is none). */
  query: string;
  /** The headers to sign, `host` included; names in any case. `authorization` is never signed. */
  headers: Readonly<Record<string, string | readonly string[]>>;
  /** Lower-case hex SHA-256 of the body, or UNSIGNED-PAYLOAD. */
  payloadHash: string;
}

export interface SigV4Options {
  service: string;
  region: string;
  date: Date;
  /**
   * Every service but S3 normalises the path (`.`/`..` segments, repeated slashes) and encodes the
   * wire path once more; S3 signs the object key as it is, encoded once.
   */
  normalizePath: boolean;
  /** Also send and sign `x-amz-content-sha256` (S3 requires it). */
  signPayloadHeader: boolean;
}

export interface SigV4Signature {
  /** What to set on the request: authorization, x-amz-date, and the token and payload hash when used. */
  headers: Record<string, string>;
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
}

/** RFC 3986 encoding as SigV4 wants it: everything but `A-Za-z0-9-_.~` percent-encoded. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function decodeLeniently(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** `/a/./b/../c//` → `/a/c/`: the path without dot segments or empty segments. */
function normalizedSegments(path: string): string[] {
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  return out;
}

export function canonicalUri(path: string, normalize: boolean): string {
  if (!normalize)
    return (
      path
        .split("/")
        .map((segment) => uriEncode(decodeLeniently(segment)))
        .join("/") || "/"
    );
  const segments = normalizedSegments(path);
  if (segments.length === 0) return "/";
  const trailing = path.endsWith("/") ? "/" : "";
  return `/${segments.map(uriEncode).join("/")}${trailing}`;
}

export function canonicalQuery(query: string): string {
  return query
    .split("&")
    .filter((pair) => pair !== "")
    .map((pair) => {
      const equals = pair.indexOf("=");
      const key = equals === -1 ? pair : pair.slice(0, equals);
      const value = equals === -1 ? "" : pair.slice(equals + 1);
      return [uriEncode(decodeLeniently(key)), uriEncode(decodeLeniently(value))] as const;
    })
    .sort(([keyA, valueA], [keyB, valueB]) => (keyA === keyB ? compare(valueA, valueB) : compare(keyA, keyB)))
    .map(([key, value]) => `${key}=${value}`)
    .join("&");
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Trimmed, inner runs of whitespace (folded lines included) collapsed to one space. */
function canonicalHeaderValue(value: string): string {
  return value.trim().replace(/\s+/g, " ");
}

/** `20150830T123600Z` */
export function amzDate(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data, "utf8").digest();
}

/** Signs a request: the headers to set, and the intermediate strings (for tests and debugging). */
export function signSigV4(
  request: SigV4Request,
  credentials: SigV4Credentials,
  options: SigV4Options,
): SigV4Signature {
  const timestamp = amzDate(options.date);
  const day = timestamp.slice(0, 8);
  const added: Record<string, string> = { "x-amz-date": timestamp };
  if (credentials.sessionToken) added["x-amz-security-token"] = credentials.sessionToken;
  if (options.signPayloadHeader) added["x-amz-content-sha256"] = request.payloadHash;

  const headers = new Map<string, string[]>();
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase();
    if (lower === "authorization" || lower in added) continue;
    const values = typeof value === "string" ? [value] : [...value];
    headers.set(lower, [...(headers.get(lower) ?? []), ...values]);
  }
  for (const [name, value] of Object.entries(added)) headers.set(name, [value]);
  const names = [...headers.keys()].sort(compare);
  const signedHeaders = names.join(";");
  const canonicalHeaders = names
    .map((name) => `${name}:${headers.get(name)!.map(canonicalHeaderValue).join(",")}\n`)
    .join("");

  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalUri(request.path, options.normalizePath),
    canonicalQuery(request.query),
    canonicalHeaders,
    signedHeaders,
    request.payloadHash,
  ].join("\n");
  const scope = `${day}/${options.region}/${options.service}/aws4_request`;
  const stringToSign = [SIGV4_ALGORITHM, timestamp, scope, sha256Hex(canonicalRequest)].join("\n");
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), options.region), options.service),
    "aws4_request",
  );
  const signature = createHmac("sha256", signingKey).update(stringToSign, "utf8").digest("hex");
  return {
    headers: {
      authorization: `${SIGV4_ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
      ...added,
    },
    canonicalRequest,
    stringToSign,
    signature,
  };
}
