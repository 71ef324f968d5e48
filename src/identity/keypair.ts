import type { KeyObject } from "node:crypto";
import { InvalidInputError } from "../core/errors.ts";
import { nodeCrypto } from "../core/node-crypto.ts";
import { didFromKey } from "./did-key.ts";

const { createPrivateKey, createPublicKey, generateKeyPairSync } = nodeCrypto;

/**
 * A JSON Web Key as an object. Our own type rather than node:crypto's, whose `JsonWebKey` export
 * some @types/node majors lack: the library's declarations must compile against 22, 24 and newer.
 */
export interface PrivateJwk {
  kty?: string;
  crv?: string;
  d?: string;
  x?: string;
  [member: string]: unknown;
}

/** An Ed25519 key pair and the did:key naming its public half. */
export interface IdentityKeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
  did: string;
}

/** A fresh Ed25519 key pair from node:crypto's CSPRNG. */
export function generateIdentityKeyPair(): IdentityKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return { privateKey, publicKey, did: didFromKey(publicKey) };
}

/** The key pair (and did:key) of an Ed25519 private key. */
export function identityKeyPairFromPrivateKey(privateKey: KeyObject): IdentityKeyPair {
  assertEd25519PrivateKey(privateKey);
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, did: didFromKey(publicKey) };
}

/** An Ed25519 private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). */
export function privateKeyToPem(privateKey: KeyObject): string {
  assertEd25519PrivateKey(privateKey);
  return privateKey.export({ format: "pem", type: "pkcs8" }).toString();
}

/** Reads an unencrypted PKCS#8 PEM Ed25519 private key. Throws InvalidInputError otherwise. */
export function privateKeyFromPem(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new InvalidInputError("The private key is not a readable PEM private key.");
  }
  assertEd25519PrivateKey(key);
  return key;
}

/**
 * An Ed25519 private key handed over in memory (a container's environment, a secret store): a
 * KeyObject, PKCS#8 PEM text, a JWK object, or JWK JSON text. Throws InvalidInputError otherwise;
 * the message never quotes the value.
 */
export function privateKeyFromValue(value: KeyObject | PrivateJwk | string): KeyObject {
  if (typeof value === "string") {
    const text = value.trim();
    if (text.startsWith("-----BEGIN")) return privateKeyFromPem(text);
    let jwk: unknown;
    try {
      jwk = JSON.parse(text);
    } catch {
      throw new InvalidInputError("The private key is neither PKCS#8 PEM nor JWK JSON.");
    }
    return privateKeyFromJwk(jwk);
  }
  if (value instanceof nodeCrypto.KeyObject) {
    assertEd25519PrivateKey(value);
    return value;
  }
  return privateKeyFromJwk(value);
}

/** Reads an Ed25519 private JWK (`{"kty": "OKP", "crv": "Ed25519", "d": ..., "x": ...}`). */
export function privateKeyFromJwk(jwk: unknown): KeyObject {
  const fields = jwk && typeof jwk === "object" ? (jwk as Record<string, unknown>) : {};
  if (fields.kty !== "OKP" || fields.crv !== "Ed25519" || typeof fields.d !== "string") {
    throw new InvalidInputError('The private key JWK must have kty "OKP", crv "Ed25519" and a "d" member.');
  }
  try {
    return createPrivateKey({ key: fields as PrivateJwk, format: "jwk" });
  } catch {
    throw new InvalidInputError("The private key JWK is not a readable Ed25519 key.");
  }
}

function assertEd25519PrivateKey(key: KeyObject): void {
  if (key.type !== "private" || key.asymmetricKeyType !== "ed25519") {
    throw new InvalidInputError(
      `Expected an Ed25519 private key, got ${key.type} ${key.asymmetricKeyType ?? "key"}.`,
    );
  }
}
