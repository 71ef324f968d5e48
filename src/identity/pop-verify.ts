import type { KeyObject } from "node:crypto";
import { AuthenticationFailedError } from "../core/errors.ts";
import { nodeCrypto } from "../core/node-crypto.ts";
import { decodeBase64urlStrict } from "./base64url.ts";
import { DID_KEY_PREFIX, publicKeyFromDid } from "./did-key.ts";
import { isValidHandle } from "./handle.ts";
import {
  bodySha256Hex,
  POP_ALGORITHM,
  POP_AUDIENCE,
  POP_MAX_FUTURE_SKEW_SECONDS,
  POP_MAX_JTI_LENGTH,
  POP_MAX_LIFETIME_SECONDS,
  POP_MAX_TOKEN_LENGTH,
  POP_TOKEN_TYPE,
  type PopClaims,
} from "./pop-claims.ts";
import type { ReplayCache } from "./replay-cache.ts";

const { verify } = nodeCrypto;

/** The request a PoP token must match. */
export interface PopRequest {
  /** The HTTP method as received. */
  method: string;
  /** The path and query exactly as received (the raw request target, not a re-serialised URL). */
  pathAndQuery: string;
  /** The exact body bytes received; empty when there is none. */
  body: Uint8Array;
}

/** A registered identity, as the verifier's lookup returns it. */
export interface RegisteredIdentity {
  did: string;
  publicKey: KeyObject;
}

export interface VerifyPopContext {
  /** The verifier's clock, in seconds since the epoch. */
  nowSeconds: number;
  /** The registered identity for a handle, or undefined if there is none. */
  lookupIdentity(handle: string): Promise<RegisteredIdentity | undefined> | RegisteredIdentity | undefined;
  replayCache: ReplayCache;
}

export interface VerifySelfSignedPopContext {
  nowSeconds: number;
  replayCache: ReplayCache;
}

interface ParsedToken {
  claims: PopClaims;
  signingInput: Buffer;
  signature: Buffer;
}

const ED25519_SIGNATURE_LENGTH = 64;
const HEX_SHA256 = /^[0-9a-f]{64}$/;
const MAX_DID_LENGTH = 128;
/** Reused: a decoder without `stream` keeps no state between calls. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Verifies the PoP token of a request to a protected route and returns its claims. Throws
 * AuthenticationFailedError, with a short message that never repeats the token, unless: the token is
 * a well-formed EdDSA `svc-pop+jwt`; `sub` is a registered handle whose key signed it and whose DID is
 * `iss`; `aud` is `svc-daemon`; it is unexpired (no leeway: refused once `now >= exp`); `iat` is at most
 * 30 s ahead; `0 < exp - iat <= 60`; `htm`, `htu` and `body_sha256` match the request; and its `jti`
 * has not been seen. Checks run cheapest first; the replay cache is consulted last, so only a token
 * that is otherwise valid consumes its `jti`.
 */
export async function verifyPopToken(
  token: string,
  request: PopRequest,
  context: VerifyPopContext,
): Promise<PopClaims> {
  const parsed = parseToken(token);
  assertClock(context.nowSeconds);
  const identity = await context.lookupIdentity(parsed.claims.sub);
  if (!identity) throw fail("PoP token names an unknown identity.");
  assertSignature(parsed, identity.publicKey);
  if (parsed.claims.iss !== identity.did) {
    throw fail("PoP token issuer is not the DID registered for its identity.");
  }
  assertClaimsMatch(parsed.claims, request, context.nowSeconds);
  await consumeJti(parsed.claims, context.replayCache);
  return parsed.claims;
}

/**
 * Verifies a PoP token exactly as verifyPopToken does, except that the key is the one the `iss`
 * did:key names rather than a registered one. For self-registration: it proves the caller holds the
 * key of `iss`, nothing more; the caller must still check `sub` and `iss` against the registration.
 */
export async function verifySelfSignedPopToken(
  token: string,
  request: PopRequest,
  context: VerifySelfSignedPopContext,
): Promise<PopClaims> {
  const parsed = parseToken(token);
  assertClock(context.nowSeconds);
  let publicKey: KeyObject;
  try {
    publicKey = publicKeyFromDid(parsed.claims.iss);
  } catch {
    throw fail("PoP token issuer is not a valid Ed25519 did:key.");
  }
  assertSignature(parsed, publicKey);
  assertClaimsMatch(parsed.claims, request, context.nowSeconds);
  await consumeJti(parsed.claims, context.replayCache);
  return parsed.claims;
}

function fail(message: string): Error {
  return new AuthenticationFailedError(message);
}

/** Structure only: three canonical base64url parts, EdDSA `svc-pop+jwt` header, well-typed claims. */
function parseToken(token: string): ParsedToken {
  if (typeof token !== "string" || token.length === 0) throw fail("PoP token is missing.");
  if (token.length > POP_MAX_TOKEN_LENGTH) throw fail("PoP token is too long.");
  const parts = token.split(".");
  if (parts.length !== 3) throw fail("PoP token is malformed: expected three dot-separated parts.");
  const [encodedHeader, encodedClaims, encodedSignature] = parts as [string, string, string];

  const header = decodeJsonObject(encodedHeader, "header");
  if (header.alg !== POP_ALGORITHM) throw fail("PoP token algorithm is not EdDSA.");
  if (header.typ !== POP_TOKEN_TYPE) throw fail(`PoP token type is not ${POP_TOKEN_TYPE}.`);
  if (header.crit !== undefined) throw fail("PoP token header has unsupported critical parameters.");

  const claims = readClaims(decodeJsonObject(encodedClaims, "payload"));

  const signature = decodeBase64urlStrict(encodedSignature);
  if (!signature || signature.length !== ED25519_SIGNATURE_LENGTH) {
    throw fail("PoP token is malformed: the signature is not a 64-byte base64url value.");
  }
  return {
    claims,
    signingInput: Buffer.from(`${encodedHeader}.${encodedClaims}`, "ascii"),
    signature,
  };
}

function decodeJsonObject(encoded: string, part: "header" | "payload"): Record<string, unknown> {
  const bytes = encoded.length > 0 ? decodeBase64urlStrict(encoded) : undefined;
  if (!bytes) throw fail(`PoP token is malformed: the ${part} is not base64url.`);
  let value: unknown;
  try {
    value = JSON.parse(STRICT_UTF8.decode(bytes));
  } catch {
    throw fail(`PoP token is malformed: the ${part} is not JSON.`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw fail(`PoP token is malformed: the ${part} is not a JSON object.`);
  }
  return value as Record<string, unknown>;
}

function readClaims(raw: Record<string, unknown>): PopClaims {
  const { iss, sub, aud, iat, exp, jti, htm, htu, body_sha256 } = raw;
  if (typeof iss !== "string" || !iss.startsWith(DID_KEY_PREFIX) || iss.length > MAX_DID_LENGTH) {
    throw fail("PoP token claim 'iss' must be a did:key.");
  }
  if (!isValidHandle(sub)) throw fail("PoP token claim 'sub' must be a valid handle.");
  if (typeof aud !== "string") throw fail("PoP token claim 'aud' must be a string.");
  if (!Number.isSafeInteger(iat)) throw fail("PoP token claim 'iat' must be an integer.");
  if (!Number.isSafeInteger(exp)) throw fail("PoP token claim 'exp' must be an integer.");
  if (typeof jti !== "string" || jti.length === 0 || jti.length > POP_MAX_JTI_LENGTH) {
    throw fail(`PoP token claim 'jti' must be a string of 1-${POP_MAX_JTI_LENGTH} characters.`);
  }
  if (typeof htm !== "string" || htm.length === 0) throw fail("PoP token claim 'htm' must be a string.");
  if (typeof htu !== "string" || htu.length === 0) throw fail("PoP token claim 'htu' must be a string.");
  if (typeof body_sha256 !== "string" || !HEX_SHA256.test(body_sha256)) {
    throw fail("PoP token claim 'body_sha256' must be a lowercase hex SHA-256.");
  }
  return {
    iss,
    sub,
    aud: aud as typeof POP_AUDIENCE,
    iat: iat as number,
    exp: exp as number,
    jti,
    htm,
    htu,
    body_sha256,
  };
}

function assertClock(nowSeconds: number): void {
  if (!Number.isFinite(nowSeconds)) throw new TypeError("verifyPopToken needs a finite nowSeconds.");
}

function assertSignature(parsed: ParsedToken, publicKey: KeyObject): void {
  if (publicKey.type !== "public" || publicKey.asymmetricKeyType !== "ed25519") {
    throw fail("PoP token cannot be checked: the identity's key is not an Ed25519 public key.");
  }
  let valid = false;
  try {
    valid = verify(null, parsed.signingInput, publicKey, parsed.signature);
  } catch {
    valid = false;
  }
  if (!valid) throw fail("PoP token signature is invalid.");
}

function assertClaimsMatch(claims: PopClaims, request: PopRequest, nowSeconds: number): void {
  if (claims.aud !== POP_AUDIENCE) throw fail(`PoP token audience is not ${POP_AUDIENCE}.`);
  if (claims.exp <= claims.iat) throw fail("PoP token expires before it is issued.");
  if (claims.exp - claims.iat > POP_MAX_LIFETIME_SECONDS) {
    throw fail(`PoP token lifetime exceeds ${POP_MAX_LIFETIME_SECONDS} seconds.`);
  }
  if (claims.exp <= nowSeconds) throw fail("PoP token has expired.");
  if (claims.iat > nowSeconds + POP_MAX_FUTURE_SKEW_SECONDS) throw fail("PoP token is issued in the future.");
  if (claims.htm !== request.method.toUpperCase())
    throw fail("PoP token was signed for a different HTTP method.");
  if (claims.htu !== request.pathAndQuery) throw fail("PoP token was signed for a different path or query.");
  if (claims.body_sha256 !== bodySha256Hex(request.body))
    throw fail("PoP token was signed for a different body.");
}

/** Last: only a token that passed every other check may consume its id. Ids are scoped to the issuer. */
async function consumeJti(claims: PopClaims, replayCache: ReplayCache): Promise<void> {
  const fresh = await replayCache.remember(replayKey(claims), claims.exp);
  if (!fresh) throw fail("PoP token has already been used.");
}

/** The replay-cache key of a token: its issuer and its jti (so one identity cannot burn another's ids). */
export function replayKey(claims: Pick<PopClaims, "iss" | "jti">): string {
  return `${claims.iss} ${claims.jti}`;
}
