import { generateKeyPairSync, sign, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { publicKeyFromDid } from "./did-key.ts";
import {
  generateIdentityKeyPair,
  identityKeyPairFromPrivateKey,
  privateKeyFromPem,
  privateKeyFromValue,
  privateKeyToPem,
} from "./keypair.ts";

describe("identity key pairs", () => {
  it("generates an Ed25519 key pair whose did names its public key", () => {
    const pair = generateIdentityKeyPair();
    expect(pair.privateKey.asymmetricKeyType).toBe("ed25519");
    expect(pair.did).toMatch(/^did:key:z6Mk/);
    expect(publicKeyFromDid(pair.did).equals(pair.publicKey)).toBe(true);
  });

  it("round-trips a private key through PKCS#8 PEM", () => {
    const pair = generateIdentityKeyPair();
    const pem = privateKeyToPem(pair.privateKey);
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const loaded = privateKeyFromPem(pem);
    expect(identityKeyPairFromPrivateKey(loaded).did).toBe(pair.did);
    const message = Buffer.from("hello");
    expect(verify(null, message, pair.publicKey, sign(null, message, loaded))).toBe(true);
  });

  it("refuses PEM that is not a private key", () => {
    expect(() => privateKeyFromPem("not a key")).toThrow(InvalidInputError);
  });

  it("refuses a private key that is not Ed25519", () => {
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    expect(() => privateKeyFromPem(pem)).toThrow(InvalidInputError);
    expect(() => privateKeyToPem(privateKey)).toThrow(InvalidInputError);
  });

  it("reads a key handed over in memory as PEM, JWK JSON text, a JWK object or a KeyObject", () => {
    const pair = generateIdentityKeyPair();
    const jwk = pair.privateKey.export({ format: "jwk" });
    for (const value of [
      `  ${privateKeyToPem(pair.privateKey)}\n`,
      JSON.stringify(jwk),
      jwk,
      pair.privateKey,
    ]) {
      expect(identityKeyPairFromPrivateKey(privateKeyFromValue(value)).did).toBe(pair.did);
    }
  });

  it("refuses in-memory keys that are not Ed25519 private keys, without quoting them", () => {
    const pair = generateIdentityKeyPair();
    const publicJwk = pair.publicKey.export({ format: "jwk" });
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const secret = "sk-not-a-key-0123456789";
    for (const value of [secret, JSON.stringify(publicJwk), ec.export({ format: "jwk" }), ec]) {
      const error = (() => {
        try {
          privateKeyFromValue(value);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).not.toContain(secret);
    }
  });
});
