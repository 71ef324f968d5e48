import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from "node:crypto";
import { InvalidInputError, VaultUnavailableError } from "../core/errors.ts";

/**
 * Sealed values: base64 of `0x01 | 12-byte random nonce | AES-256-GCM ciphertext | 16-byte tag`,
 * with the caller's associated data (a string naming what the value is for) authenticated but not
 * stored, so a value copied to another record fails to open.
 */

export const ENVELOPE_VERSION = 0x01;
export const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + NONCE_BYTES;
const KEK_INFO = "svc/vault/kek/v1";

/**
 * A 32-byte AES-256-GCM key: raw bytes, or a KeyObject (envelopeKey) for a key used many times,
 * since a raw key is imported again on every seal and open (three times the cost of a small open).
 */
export type EnvelopeKey = Buffer | KeyObject;

/** The key as a KeyObject, imported once. */
export function envelopeKey(raw: Buffer): KeyObject {
  assertKey(raw);
  return createSecretKey(raw);
}

/** The key-encryption key: HKDF-SHA256(master secret, salt = empty, info = "svc/vault/kek/v1"), 32 bytes. */
export function deriveKeyEncryptionKey(masterSecret: Buffer): Buffer {
  if (!Buffer.isBuffer(masterSecret) || masterSecret.length !== KEY_BYTES) {
    throw new InvalidInputError(`the master secret must be ${KEY_BYTES} bytes`);
  }
  return Buffer.from(hkdfSync("sha256", masterSecret, Buffer.alloc(0), KEK_INFO, KEY_BYTES));
}

export function seal(key: EnvelopeKey, plaintext: Buffer, aad: string): string {
  assertKey(key);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(ENVELOPE_VERSION), nonce, body, cipher.getAuthTag()]).toString("base64");
}

/**
 * Opens a sealed value. Any defect (not base64, truncated, unknown version, altered byte, wrong
 * key, wrong associated data) throws VaultUnavailableError; the message names neither key nor data.
 */
export function open(key: EnvelopeKey, sealed: string, aad: string): Buffer {
  assertKey(key);
  if (typeof sealed !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(sealed)) {
    throw new VaultUnavailableError("sealed value is not valid base64 (the stored record is damaged)");
  }
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.toString("base64") !== sealed) {
    throw new VaultUnavailableError("sealed value is not valid base64 (the stored record is damaged)");
  }
  if (bytes.length < HEADER_BYTES + TAG_BYTES) {
    throw new VaultUnavailableError("sealed value is truncated (the stored record is damaged)");
  }
  if (bytes[0] !== ENVELOPE_VERSION) {
    throw new VaultUnavailableError(`sealed value has unknown format version ${bytes[0]}`);
  }
  const nonce = bytes.subarray(1, HEADER_BYTES);
  const body = bytes.subarray(HEADER_BYTES, bytes.length - TAG_BYTES);
  const tag = bytes.subarray(bytes.length - TAG_BYTES);
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(aad, "utf8"));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]);
  } catch {
    throw new VaultUnavailableError(
      "sealed value failed authentication (altered, sealed under another key, or copied from another record)",
    );
  }
}

function assertKey(key: EnvelopeKey): void {
  const size = Buffer.isBuffer(key) ? key.length : key.type === "secret" ? key.symmetricKeySize : 0;
  if (size !== KEY_BYTES) {
    throw new InvalidInputError(`an encryption key must be ${KEY_BYTES} bytes`);
  }
}
