import type { KeyObject } from "node:crypto";
import { base58 } from "@scure/base";
import { InvalidInputError } from "../core/errors.ts";
import { nodeCrypto } from "../core/node-crypto.ts";
import { decodeBase64urlStrict, encodeBase64url } from "./base64url.ts";

const { createPublicKey } = nodeCrypto;

/** Every did:key this module makes or accepts: `did:key:` + multibase prefix `z` (base58btc). */
export const DID_KEY_PREFIX = "did:key:z";

/** The unsigned-varint multicodec prefix for an Ed25519 public key (0xed). */
const ED25519_MULTICODEC = Uint8Array.of(0xed, 0x01);
const ED25519_PUBLIC_KEY_LENGTH = 32;
/** An Ed25519 did:key is 56 characters; anything much longer is refused before base58 decoding. */
const MAX_DID_LENGTH = 128;

/** The did:key for a raw 32-byte Ed25519 public key: `did:key:z` + base58btc(0xed 0x01 ‖ key). */
export function didFromPublicKey(raw: Uint8Array): string {
  if (raw.length !== ED25519_PUBLIC_KEY_LENGTH) {
    throw new InvalidInputError(`An Ed25519 public key is 32 bytes, not ${raw.length}.`);
  }
  const bytes = new Uint8Array(ED25519_MULTICODEC.length + raw.length);
  bytes.set(ED25519_MULTICODEC, 0);
  bytes.set(raw, ED25519_MULTICODEC.length);
  return DID_KEY_PREFIX + base58.encode(bytes);
}

/** The Ed25519 public key a did:key names. Throws InvalidInputError for anything else. */
export function publicKeyFromDid(did: string): KeyObject {
  if (typeof did !== "string" || !did.startsWith(DID_KEY_PREFIX)) {
    throw new InvalidInputError("Not a did:key identifier: it must start with 'did:key:z'.");
  }
  if (did.length > MAX_DID_LENGTH) {
    throw new InvalidInputError("The did:key identifier is too long to be an Ed25519 key.");
  }
  let bytes: Uint8Array;
  try {
    bytes = base58.decode(did.slice(DID_KEY_PREFIX.length));
  } catch {
    throw new InvalidInputError("The did:key identifier is not valid base58btc.");
  }
  if (bytes.length < 2 || bytes[0] !== ED25519_MULTICODEC[0] || bytes[1] !== ED25519_MULTICODEC[1]) {
    throw new InvalidInputError("The did:key identifier does not name an Ed25519 key (multicodec 0xed).");
  }
  const raw = bytes.subarray(ED25519_MULTICODEC.length);
  if (raw.length !== ED25519_PUBLIC_KEY_LENGTH) {
    throw new InvalidInputError(
      `The did:key identifier holds ${raw.length} key bytes; an Ed25519 key is 32.`,
    );
  }
  try {
    return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: encodeBase64url(raw) }, format: "jwk" });
  } catch {
    throw new InvalidInputError("The did:key identifier does not hold a usable Ed25519 public key.");
  }
}

/** The raw 32-byte Ed25519 public key of a key object (a private key gives its public half). */
export function rawPublicKey(key: KeyObject): Uint8Array {
  if (key.asymmetricKeyType !== "ed25519") {
    throw new InvalidInputError(`Expected an Ed25519 key, got ${key.asymmetricKeyType ?? key.type}.`);
  }
  const publicKey = key.type === "private" ? createPublicKey(key) : key;
  const x = publicKey.export({ format: "jwk" }).x;
  const raw = typeof x === "string" ? decodeBase64urlStrict(x) : undefined;
  if (!raw || raw.length !== ED25519_PUBLIC_KEY_LENGTH) {
    throw new InvalidInputError("Could not read the Ed25519 public key bytes.");
  }
  return new Uint8Array(raw);
}

/** The did:key of an Ed25519 key object (public or private). */
export function didFromKey(key: KeyObject): string {
  return didFromPublicKey(rawPublicKey(key));
}
