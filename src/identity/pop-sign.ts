import type { KeyObject } from "node:crypto";
import { InvalidInputError } from "../core/errors.ts";
import { nodeCrypto } from "../core/node-crypto.ts";
import { encodeBase64url } from "./base64url.ts";
import { isValidHandle } from "./handle.ts";
import {
  bodySha256Hex,
  POP_ALGORITHM,
  POP_AUDIENCE,
  POP_DEFAULT_LIFETIME_SECONDS,
  POP_MAX_JTI_LENGTH,
  POP_MAX_LIFETIME_SECONDS,
  POP_TOKEN_TYPE,
  type PopClaims,
  type PopHeader,
} from "./pop-claims.ts";

const { randomBytes, sign } = nodeCrypto;

export interface SignPopTokenInput {
  handle: string;
  did: string;
  privateKey: KeyObject;
  /** The HTTP method; it is uppercased. */
  method: string;
  /** The request's path and query exactly as it will be sent, e.g. `/api/ready?x=1`. */
  pathAndQuery: string;
  /** The exact body bytes that will be sent (a string is sent as UTF-8); none means empty. */
  body?: string | Uint8Array;
  /** The clock, in whole seconds since the epoch; defaults to the system clock. */
  nowSeconds?: number;
  /** Defaults to 30; at most 60. */
  lifetimeSeconds?: number;
  /** Defaults to 16 random bytes, base64url. */
  jti?: string;
}

const HEADER: PopHeader = { alg: POP_ALGORITHM, typ: POP_TOKEN_TYPE };
const ENCODED_HEADER = encodeBase64url(JSON.stringify(HEADER));

/**
 * Signs the PoP token for one request (`Authorization: PoP <token>`). Synchronous: one Ed25519
 * signature with node:crypto. Throws InvalidInputError for inputs that could never verify.
 */
export function signPopToken(input: SignPopTokenInput): string {
  const nowSeconds = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  const lifetime = input.lifetimeSeconds ?? POP_DEFAULT_LIFETIME_SECONDS;
  const jti = input.jti ?? randomBytes(16).toString("base64url");
  if (!Number.isSafeInteger(nowSeconds) || nowSeconds < 0) {
    throw new InvalidInputError("The PoP token time must be whole seconds since the epoch.");
  }
  if (!Number.isSafeInteger(lifetime) || lifetime < 1 || lifetime > POP_MAX_LIFETIME_SECONDS) {
    throw new InvalidInputError(`A PoP token lifetime is 1-${POP_MAX_LIFETIME_SECONDS} whole seconds.`);
  }
  if (jti.length === 0 || jti.length > POP_MAX_JTI_LENGTH) {
    throw new InvalidInputError(`A PoP token jti is 1-${POP_MAX_JTI_LENGTH} characters.`);
  }
  if (!isValidHandle(input.handle))
    throw new InvalidInputError("The PoP token handle is not a valid handle.");
  if (input.method.length === 0) throw new InvalidInputError("The PoP token needs an HTTP method.");
  const claims: PopClaims = {
    iss: input.did,
    sub: input.handle,
    aud: POP_AUDIENCE,
    iat: nowSeconds,
    exp: nowSeconds + lifetime,
    jti,
    htm: input.method.toUpperCase(),
    htu: input.pathAndQuery,
    body_sha256: bodySha256Hex(input.body),
  };
  const signingInput = `${ENCODED_HEADER}.${encodeBase64url(JSON.stringify(claims))}`;
  const signature = sign(null, Buffer.from(signingInput, "ascii"), input.privateKey);
  return `${signingInput}.${encodeBase64url(signature)}`;
}
