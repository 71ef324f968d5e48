import { nodeCrypto } from "../core/node-crypto.ts";

const { createHash } = nodeCrypto;

/** The `aud` of every PoP token: the local daemon. */
export const POP_AUDIENCE = "svc-daemon";
/** The JOSE `typ` header of a PoP token. */
export const POP_TOKEN_TYPE = "svc-pop+jwt";
/** The only accepted JOSE `alg`. */
export const POP_ALGORITHM = "EdDSA";
/** The longest a token may live: `exp - iat` is at most this. */
export const POP_MAX_LIFETIME_SECONDS = 60;
/** How far in the future `iat` may be (clock skew between signer and verifier). */
export const POP_MAX_FUTURE_SKEW_SECONDS = 30;
/** The lifetime `signPopToken` uses unless told otherwise. */
export const POP_DEFAULT_LIFETIME_SECONDS = 30;
/** Tokens longer than this are refused before any parsing. It bounds `htu` too. */
export const POP_MAX_TOKEN_LENGTH = 4096;
/** The longest accepted `jti`. */
export const POP_MAX_JTI_LENGTH = 128;
/** The scheme of the `Authorization` header: `Authorization: PoP <jwt>`. */
export const POP_AUTHORIZATION_SCHEME = "PoP";

/** The JOSE header of a PoP token. */
export interface PopHeader {
  alg: typeof POP_ALGORITHM;
  typ: typeof POP_TOKEN_TYPE;
}

/** The claims of a PoP token, binding one HTTP request to one identity for a short time. */
export interface PopClaims {
  /** The signer's did:key. */
  iss: string;
  /** The signer's handle. */
  sub: string;
  aud: typeof POP_AUDIENCE;
  /** Issued at, in seconds since the epoch. */
  iat: number;
  /** Expires at, in seconds since the epoch; `exp - iat` is in `(0, 60]`. */
  exp: number;
  /** A unique random id; each is accepted once. */
  jti: string;
  /** The HTTP method, uppercase. */
  htm: string;
  /** The request's path and query exactly as sent, e.g. `/api/ready?x=1`. */
  htu: string;
  /** Lowercase hex SHA-256 of the exact body bytes (of the empty string when there is no body). */
  body_sha256: string;
}

/** Lowercase hex SHA-256 of a request body; a string is hashed as its UTF-8 bytes. */
export function bodySha256Hex(body: string | Uint8Array = new Uint8Array()): string {
  return createHash("sha256").update(body).digest("hex");
}
