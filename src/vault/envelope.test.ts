import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidInputError, VaultUnavailableError } from "../core/errors.ts";
import { deriveKeyEncryptionKey, envelopeKey, open, seal } from "./envelope.ts";

describe("envelope", () => {
  const key = randomBytes(32);

  it("seals and opens a value", () => {
    const plaintext = Buffer.from('{"token":"abc"}');
    const sealed = seal(key, plaintext, "aad-1");
    expect(open(key, sealed, "aad-1").equals(plaintext)).toBe(true);
    const bytes = Buffer.from(sealed, "base64");
    expect(bytes[0]).toBe(0x01);
    expect(bytes.length).toBe(1 + 12 + plaintext.length + 16);
  });

  it("uses a fresh nonce each time", () => {
    const plaintext = Buffer.from("same");
    expect(seal(key, plaintext, "a")).not.toBe(seal(key, plaintext, "a"));
  });

  it("seals an empty plaintext", () => {
    expect(open(key, seal(key, Buffer.alloc(0), "a"), "a").length).toBe(0);
  });

  it("refuses every flipped bit, a wrong key, a wrong aad, truncation and a bad version", () => {
    const sealed = seal(key, Buffer.from("secret value"), "aad");
    const bytes = Buffer.from(sealed, "base64");
    for (let i = 0; i < bytes.length; i++) {
      for (const mask of [0x01, 0x80]) {
        const altered = Buffer.from(bytes);
        altered[i]! ^= mask;
        expect(() => open(key, altered.toString("base64"), "aad")).toThrow(VaultUnavailableError);
      }
    }
    expect(() => open(randomBytes(32), sealed, "aad")).toThrow(VaultUnavailableError);
    expect(() => open(key, sealed, "aad2")).toThrow(VaultUnavailableError);
    for (const length of [0, 1, 13, 28, bytes.length - 1]) {
      expect(() => open(key, bytes.subarray(0, length).toString("base64"), "aad")).toThrow(
        VaultUnavailableError,
      );
    }
    const version2 = Buffer.from(bytes);
    version2[0] = 0x02;
    expect(() => open(key, version2.toString("base64"), "aad")).toThrow(/version 2/);
    expect(() => open(key, "not base64!", "aad")).toThrow(VaultUnavailableError);
    expect(() => open(key, `${sealed}\n`, "aad")).toThrow(VaultUnavailableError);
  });

  it("never puts the key or the plaintext in its messages", () => {
    const sealed = seal(key, Buffer.from("PLAINTEXT-CANARY"), "aad");
    try {
      open(key, sealed, "other");
      expect.unreachable();
    } catch (error) {
      const message = (error as Error).message;
      expect(message).not.toContain("PLAINTEXT-CANARY");
      expect(message).not.toContain(key.toString("base64"));
      expect(message).not.toContain(key.toString("hex"));
    }
  });

  it("takes the key as bytes or as an imported KeyObject, interchangeably", () => {
    const imported = envelopeKey(key);
    const plaintext = Buffer.from("either form");
    expect(open(imported, seal(key, plaintext, "a"), "a").equals(plaintext)).toBe(true);
    expect(open(key, seal(imported, plaintext, "a"), "a").equals(plaintext)).toBe(true);
    expect(() => open(envelopeKey(randomBytes(32)), seal(key, plaintext, "a"), "a")).toThrow(
      VaultUnavailableError,
    );
  });

  it("rejects keys of the wrong size", () => {
    expect(() => seal(randomBytes(16), Buffer.from("x"), "a")).toThrow(InvalidInputError);
    expect(() => envelopeKey(randomBytes(16))).toThrow(InvalidInputError);
    expect(() => deriveKeyEncryptionKey(randomBytes(31))).toThrow(InvalidInputError);
  });

  it("derives a stable KEK distinct from the master secret", () => {
    const master = randomBytes(32);
    const kek = deriveKeyEncryptionKey(master);
    expect(kek.length).toBe(32);
    expect(kek.equals(deriveKeyEncryptionKey(Buffer.from(master)))).toBe(true);
    expect(kek.equals(master)).toBe(false);
  });
});
