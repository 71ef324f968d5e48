import { generateKeyPairSync } from "node:crypto";
import { base58 } from "@scure/base";
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { didFromKey, didFromPublicKey, publicKeyFromDid, rawPublicKey } from "./did-key.ts";

// The Ed25519 example of the did:key method specification (W3C CCG): its JWK `x` is
// O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik and its publicKeyBase58 4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS.
const VECTOR_DID = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp";
const VECTOR_PUBLIC_KEY_HEX = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";

function didWithBytes(bytes: number[]): string {
  return `did:key:z${base58.encode(Uint8Array.from(bytes))}`;
}

describe("did:key", () => {
  it("encodes the did:key specification's Ed25519 test vector", () => {
    expect(didFromPublicKey(Buffer.from(VECTOR_PUBLIC_KEY_HEX, "hex"))).toBe(VECTOR_DID);
  });

  it("decodes the did:key specification's Ed25519 test vector", () => {
    const key = publicKeyFromDid(VECTOR_DID);
    expect(key.type).toBe("public");
    expect(key.asymmetricKeyType).toBe("ed25519");
    expect(Buffer.from(rawPublicKey(key)).toString("hex")).toBe(VECTOR_PUBLIC_KEY_HEX);
    expect(base58.encode(rawPublicKey(key))).toBe("4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS");
  });

  it("round-trips generated keys, and every did starts with did:key:z6Mk", () => {
    for (let i = 0; i < 20; i++) {
      const { publicKey, privateKey } = generateKeyPairSync("ed25519");
      const did = didFromKey(publicKey);
      expect(did.startsWith("did:key:z6Mk")).toBe(true);
      expect(didFromKey(privateKey)).toBe(did);
      expect(publicKeyFromDid(did).equals(publicKey)).toBe(true);
    }
  });

  it("refuses a public key that is not 32 bytes", () => {
    expect(() => didFromPublicKey(new Uint8Array(31))).toThrow(InvalidInputError);
  });

  it("refuses a key that is not Ed25519", () => {
    const { publicKey } = generateKeyPairSync("x25519");
    expect(() => rawPublicKey(publicKey)).toThrow(InvalidInputError);
  });

  it.each([
    ["a wrong method", "did:web:example.com"],
    ["a missing multibase prefix", "did:key:6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"],
    ["a non-base58btc multibase prefix", "did:key:uO2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"],
    ["characters outside base58", "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooW0"],
    ["nothing after the prefix", "did:key:z"],
    ["a far too long value", `did:key:z${"1".repeat(500)}`],
    ["an X25519 multicodec", didWithBytes([0xec, 0x01, ...new Array(32).fill(7)])],
    ["a secp256k1 multicodec", didWithBytes([0xe7, 0x01, ...new Array(33).fill(7)])],
    ["a short Ed25519 key", didWithBytes([0xed, 0x01, ...new Array(31).fill(7)])],
    ["a long Ed25519 key", didWithBytes([0xed, 0x01, ...new Array(33).fill(7)])],
    ["a leading zero byte", didWithBytes([0x00, 0xed, 0x01, ...new Array(32).fill(7)])],
  ])("refuses a did with %s", (_label, did) => {
    expect(() => publicKeyFromDid(did)).toThrow(InvalidInputError);
  });
});
