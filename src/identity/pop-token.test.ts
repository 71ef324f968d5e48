import { createHash, createHmac, type KeyObject, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AuthenticationFailedError, InvalidInputError } from "../core/errors.ts";
import { decodeBase64urlStrict, encodeBase64url } from "./base64url.ts";
import { rawPublicKey } from "./did-key.ts";
import { generateIdentityKeyPair } from "./keypair.ts";
import {
  bodySha256Hex,
  MemoryReplayCache,
  POP_AUDIENCE,
  POP_MAX_FUTURE_SKEW_SECONDS,
  POP_MAX_LIFETIME_SECONDS,
  POP_TOKEN_TYPE,
  type PopClaims,
  type PopRequest,
  type RegisteredIdentity,
  type ReplayCache,
  signPopToken,
  verifyPopToken,
  verifySelfSignedPopToken,
} from "./pop-token.ts";

const NOW = 1_800_000_000;
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const alice = { handle: "alice-agent", ...generateIdentityKeyPair() };
const mallory = { handle: "mallory-agent", ...generateIdentityKeyPair() };

const registry = new Map<string, RegisteredIdentity>([
  [alice.handle, { did: alice.did, publicKey: alice.publicKey }],
  [mallory.handle, { did: mallory.did, publicKey: mallory.publicKey }],
]);

const BODY = '{"name":"github"}';
const REQUEST: PopRequest = { method: "POST", pathAndQuery: "/api/things?x=1", body: Buffer.from(BODY) };

function context(overrides: { nowSeconds?: number; replayCache?: ReplayCache } = {}) {
  return {
    nowSeconds: overrides.nowSeconds ?? NOW,
    replayCache: overrides.replayCache ?? new MemoryReplayCache({ nowSeconds: () => NOW }),
    lookupIdentity: async (handle: string) => registry.get(handle),
  };
}

function validToken(overrides: Partial<Parameters<typeof signPopToken>[0]> = {}): string {
  return signPopToken({
    handle: alice.handle,
    did: alice.did,
    privateKey: alice.privateKey,
    method: REQUEST.method,
    pathAndQuery: REQUEST.pathAndQuery,
    body: BODY,
    nowSeconds: NOW,
    ...overrides,
  });
}

function validClaims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    iss: alice.did,
    sub: alice.handle,
    aud: POP_AUDIENCE,
    iat: NOW,
    exp: NOW + 30,
    jti: "forged-jti-0001",
    htm: "POST",
    htu: REQUEST.pathAndQuery,
    body_sha256: bodySha256Hex(BODY),
    ...overrides,
  };
}

const VALID_HEADER = { alg: "EdDSA", typ: POP_TOKEN_TYPE };

/** Builds a compact JWS from arbitrary header and claims (objects are JSON-encoded, strings used as is). */
function forge(header: unknown, claims: unknown, key: KeyObject = alice.privateKey): string {
  const part = (value: unknown) => encodeBase64url(typeof value === "string" ? value : JSON.stringify(value));
  const signingInput = `${part(header)}.${part(claims)}`;
  return `${signingInput}.${encodeBase64url(sign(null, Buffer.from(signingInput), key))}`;
}

function verify(token: string, request: PopRequest = REQUEST, ctx = context()) {
  return verifyPopToken(token, request, ctx);
}

async function expectRejected(promise: Promise<unknown>, message?: RegExp, token?: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AuthenticationFailedError);
  if (message) expect((error as Error).message).toMatch(message);
  if (token) expect((error as Error).message).not.toContain(token);
}

describe("signPopToken and verifyPopToken", () => {
  it("verifies a valid token and returns its claims", async () => {
    const token = validToken({ jti: "jti-valid-0001" });
    const claims = await verify(token);
    expect(claims).toEqual<PopClaims>({
      iss: alice.did,
      sub: alice.handle,
      aud: "svc-daemon",
      iat: NOW,
      exp: NOW + 30,
      jti: "jti-valid-0001",
      htm: "POST",
      htu: "/api/things?x=1",
      body_sha256: createHash("sha256").update(BODY).digest("hex"),
    });
  });

  it("signs synchronously an EdDSA svc-pop+jwt header", () => {
    const token = validToken();
    expect(typeof token).toBe("string");
    const header = JSON.parse(decodeBase64urlStrict(token.split(".")[0]!)!.toString());
    expect(header).toEqual({ alg: "EdDSA", typ: "svc-pop+jwt" });
  });

  it("gives every token a fresh random jti", async () => {
    const jtis = new Set(Array.from({ length: 100 }, () => JSON.parse(payloadOf(validToken())).jti));
    expect(jtis.size).toBe(100);
  });

  it("hashes a missing body as the SHA-256 of the empty string", async () => {
    const token = validToken({ method: "get", pathAndQuery: "/api/ready", body: undefined });
    const claims = await verify(token, { method: "GET", pathAndQuery: "/api/ready", body: new Uint8Array() });
    expect(claims.body_sha256).toBe(EMPTY_SHA256);
    expect(claims.htm).toBe("GET");
  });

  it("hashes the exact bytes of a non-empty body, whether given as a string or bytes", async () => {
    const fromString = JSON.parse(payloadOf(validToken({ body: BODY }))).body_sha256;
    const fromBytes = JSON.parse(payloadOf(validToken({ body: new TextEncoder().encode(BODY) }))).body_sha256;
    expect(fromString).toBe(fromBytes);
    expect(fromString).not.toBe(EMPTY_SHA256);
    await expect(verify(validToken({ body: BODY }))).resolves.toMatchObject({ sub: alice.handle });
  });

  it("binds the path and query exactly as sent", async () => {
    const pathAndQuery = "/api/ready?x=1&y=%2F";
    const request = { method: "GET", pathAndQuery, body: new Uint8Array() };
    const token = validToken({ method: "GET", pathAndQuery, body: undefined });
    expect(JSON.parse(payloadOf(token)).htu).toBe(pathAndQuery);
    for (const other of ["/api/ready", "/api/ready?x=1", "/api/ready?y=%2F&x=1", "/api/ready?x=1&y=/"]) {
      await expectRejected(verify(token, { ...request, pathAndQuery: other }), /path or query/);
    }
    await expect(verify(token, request)).resolves.toMatchObject({ htu: pathAndQuery });
  });

  it("accepts a lookup that answers synchronously", async () => {
    const ctx = { ...context(), lookupIdentity: (handle: string) => registry.get(handle) };
    await expect(verifyPopToken(validToken(), REQUEST, ctx)).resolves.toMatchObject({ sub: alice.handle });
  });

  it("refuses to sign with a lifetime over 60 seconds or an invalid handle", () => {
    expect(() => validToken({ lifetimeSeconds: 61 })).toThrow(InvalidInputError);
    expect(() => validToken({ lifetimeSeconds: 0 })).toThrow(InvalidInputError);
    expect(() => validToken({ handle: "../alice" })).toThrow(InvalidInputError);
    expect(() => validToken({ jti: "" })).toThrow(InvalidInputError);
  });

  it("accepts a token issued up to 30 s in the future and living the full 60 s", async () => {
    const iat = NOW + POP_MAX_FUTURE_SKEW_SECONDS;
    const token = validToken({ nowSeconds: iat, lifetimeSeconds: POP_MAX_LIFETIME_SECONDS });
    await expect(verify(token)).resolves.toMatchObject({ iat });
  });

  it("accepts a token in the last second of its life", async () => {
    await expect(verify(validToken(), REQUEST, context({ nowSeconds: NOW + 29 }))).resolves.toBeDefined();
  });
});

function payloadOf(token: string): string {
  return decodeBase64urlStrict(token.split(".")[1]!)!.toString();
}

describe("verifyPopToken refuses attacks", () => {
  it.each([
    ["an empty token", ""],
    ["two parts", "a.b"],
    ["four parts", "a.b.c.d"],
    ["empty parts", ".."],
    ["a header that is not base64url", "e30=.e30.AAAA"],
    ["a header that is not JSON", `${encodeBase64url("{not json")}.e30.AAAA`],
    ["a header that is a JSON array", `${encodeBase64url("[]")}.e30.AAAA`],
    ["a header that is JSON null", `${encodeBase64url("null")}.e30.AAAA`],
  ])("refuses a malformed token: %s", async (_label, token) => {
    await expectRejected(verify(token), /malformed|missing/);
  });

  it("refuses a token whose claims are not a JSON object", async () => {
    await expectRejected(verify(forge(VALID_HEADER, "null")), /payload is not a JSON object/);
    await expectRejected(verify(forge(VALID_HEADER, "[1]")), /payload is not a JSON object/);
    await expectRejected(verify(forge(VALID_HEADER, "{")), /payload is not JSON/);
  });

  it.each(["iss", "sub", "aud", "iat", "exp", "jti", "htm", "htu", "body_sha256"])(
    "refuses a token missing the %s claim",
    async (claim) => {
      const claims = validClaims();
      delete claims[claim];
      await expectRejected(verify(forge(VALID_HEADER, claims)), new RegExp(`'${claim}'`));
    },
  );

  it.each([
    ["iss", 42],
    ["iss", "did:web:example.com"],
    ["sub", "../etc/passwd"],
    ["aud", ["svc-daemon"]],
    ["iat", String(NOW)],
    ["iat", NOW + 0.5],
    ["exp", null],
    ["jti", 7],
    ["jti", "x".repeat(129)],
    ["htm", ""],
    ["htu", { path: "/" }],
    ["body_sha256", EMPTY_SHA256.toUpperCase()],
  ])("refuses a token whose %s claim has the wrong type or shape (%j)", async (claim, value) => {
    await expectRejected(
      verify(forge(VALID_HEADER, validClaims({ [claim]: value }))),
      new RegExp(`'${claim}'`),
    );
  });

  it("refuses a signature that is not 64 bytes", async () => {
    const [header, payload] = validToken().split(".");
    await expectRejected(verify(`${header}.${payload}.${encodeBase64url(new Uint8Array(63))}`), /64-byte/);
    await expectRejected(verify(`${header}.${payload}.`), /64-byte/);
  });

  it("refuses a token longer than 4096 characters before parsing it", async () => {
    const token = validToken({ pathAndQuery: `/api/ready?pad=${"a".repeat(4096)}` });
    await expectRejected(verify(token), /too long/);
  });

  it("refuses alg none, even without a signature", async () => {
    const unsigned = `${encodeBase64url(JSON.stringify({ alg: "none", typ: POP_TOKEN_TYPE }))}.${encodeBase64url(JSON.stringify(validClaims()))}.`;
    await expectRejected(verify(unsigned), /algorithm/);
    await expectRejected(verify(forge({ alg: "none", typ: POP_TOKEN_TYPE }, validClaims())), /algorithm/);
  });

  it("refuses HS256 keyed with the public key (algorithm confusion)", async () => {
    const header = encodeBase64url(JSON.stringify({ alg: "HS256", typ: POP_TOKEN_TYPE }));
    const payload = encodeBase64url(JSON.stringify(validClaims()));
    const mac = createHmac("sha256", rawPublicKey(alice.publicKey)).update(`${header}.${payload}`).digest();
    await expectRejected(verify(`${header}.${payload}.${encodeBase64url(mac)}`), /algorithm/);
  });

  it.each(["Ed25519", "eddsa", "EDDSA", "EdDSA ", "ES256", ""])("refuses alg %j", async (alg) => {
    await expectRejected(verify(forge({ alg, typ: POP_TOKEN_TYPE }, validClaims())), /algorithm/);
  });

  it("refuses a header with no alg", async () => {
    await expectRejected(verify(forge({ typ: POP_TOKEN_TYPE }, validClaims())), /algorithm/);
  });

  it.each([["JWT"], ["dpop+jwt"], ["SVC-POP+JWT"], [undefined]])("refuses typ %j", async (typ) => {
    await expectRejected(verify(forge({ alg: "EdDSA", typ }, validClaims())), /type/);
  });

  it("refuses a header with critical extensions", async () => {
    await expectRejected(
      verify(forge({ ...VALID_HEADER, crit: ["b64"], b64: false }, validClaims())),
      /critical/,
    );
  });

  it("refuses a token whose header was changed after signing", async () => {
    const [, payload, signature] = validToken().split(".");
    const header = encodeBase64url(JSON.stringify({ ...VALID_HEADER, kid: "other" }));
    await expectRejected(verify(`${header}.${payload}.${signature}`), /signature is invalid/);
  });

  it("refuses a token whose payload was changed after signing", async () => {
    const [header, payload, signature] = validToken().split(".");
    const claims = JSON.parse(decodeBase64urlStrict(payload!)!.toString());
    const tampered = encodeBase64url(JSON.stringify({ ...claims, htu: "/api/admin" }));
    await expectRejected(
      verify(`${header}.${tampered}.${signature}`, { ...REQUEST, pathAndQuery: "/api/admin" }),
      /signature is invalid/,
    );
  });

  it("refuses a token with any byte of its signature flipped", async () => {
    const [header, payload, signature] = validToken().split(".");
    const bytes = decodeBase64urlStrict(signature!)!;
    for (let i = 0; i < bytes.length; i++) {
      const flipped = Buffer.from(bytes);
      flipped[i]! ^= 0x01;
      await expectRejected(
        verify(`${header}.${payload}.${encodeBase64url(flipped)}`),
        /signature is invalid/,
      );
    }
  });

  it("refuses a token with any character changed anywhere", async () => {
    const token = validToken();
    const replayCache = new MemoryReplayCache({ nowSeconds: () => NOW });
    for (let i = 0; i < token.length; i++) {
      if (token[i] === ".") continue;
      const replacement = token[i] === "A" ? "B" : "A";
      const tampered = token.slice(0, i) + replacement + token.slice(i + 1);
      await expectRejected(verify(tampered, REQUEST, context({ replayCache })), undefined, tampered);
    }
    await expect(verify(token, REQUEST, context({ replayCache }))).resolves.toBeDefined();
  });

  it("refuses a token signed by another key", async () => {
    await expectRejected(
      verify(forge(VALID_HEADER, validClaims(), mallory.privateKey)),
      /signature is invalid/,
    );
  });

  it("refuses a token for another audience", async () => {
    await expectRejected(verify(forge(VALID_HEADER, validClaims({ aud: "someone-else" }))), /audience/);
  });

  it("refuses an expired token, with no leeway", async () => {
    const token = validToken();
    await expectRejected(verify(token, REQUEST, context({ nowSeconds: NOW + 30 })), /expired/);
    await expectRejected(verify(token, REQUEST, context({ nowSeconds: NOW + 3600 })), /expired/);
  });

  it("refuses a token issued more than 30 s in the future", async () => {
    const token = validToken({ nowSeconds: NOW + POP_MAX_FUTURE_SKEW_SECONDS + 1 });
    await expectRejected(verify(token), /future/);
  });

  it("refuses a token living longer than 60 s", async () => {
    await expectRejected(verify(forge(VALID_HEADER, validClaims({ exp: NOW + 61 }))), /lifetime/);
    await expectRejected(
      verify(forge(VALID_HEADER, validClaims({ iat: NOW - 3600, exp: NOW + 3600 }))),
      /lifetime/,
    );
  });

  it("refuses a token that expires when or before it is issued", async () => {
    await expectRejected(verify(forge(VALID_HEADER, validClaims({ exp: NOW }))), /before it is issued/);
    await expectRejected(verify(forge(VALID_HEADER, validClaims({ exp: NOW - 1 }))), /before it is issued/);
  });

  it("refuses a token signed for another HTTP method", async () => {
    await expectRejected(verify(validToken({ method: "GET" })), /HTTP method/);
    await expectRejected(verify(forge(VALID_HEADER, validClaims({ htm: "post" }))), /HTTP method/);
  });

  it("refuses a token signed for another path or query", async () => {
    await expectRejected(verify(validToken({ pathAndQuery: "/api/things?x=2" })), /path or query/);
  });

  it("refuses a token signed for another body", async () => {
    await expectRejected(verify(validToken({ body: '{"name":"gitlab"}' })), /body/);
    await expectRejected(verify(validToken({ body: undefined })), /body/);
  });

  it("refuses a token from an unknown handle", async () => {
    const stranger = generateIdentityKeyPair();
    const token = validToken({
      handle: "stranger-agent",
      did: stranger.did,
      privateKey: stranger.privateKey,
    });
    await expectRejected(verify(token), /unknown identity/);
  });

  it("refuses a token whose issuer is not the DID registered for its handle", async () => {
    await expectRejected(verify(validToken({ did: mallory.did })), /issuer/);
  });

  it("refuses a token naming another handle, signed with the attacker's own key", async () => {
    const token = validToken({ handle: alice.handle, did: mallory.did, privateKey: mallory.privateKey });
    await expectRejected(verify(token), /signature is invalid/);
  });

  it("refuses a replayed PoP token", async () => {
    const ctx = context();
    const token = validToken();
    await expect(verify(token, REQUEST, ctx)).resolves.toBeDefined();
    await expectRejected(verify(token, REQUEST, ctx), /already been used/);
  });

  it("does not let forged or mismatched tokens consume a jti", async () => {
    const ctx = context();
    const jti = "victim-jti-0001";
    await expectRejected(
      verify(forge(VALID_HEADER, validClaims({ jti }), mallory.privateKey), REQUEST, ctx),
      /signature/,
    );
    await expectRejected(verify(validToken({ jti, pathAndQuery: "/api/other" }), REQUEST, ctx), /path/);
    await expect(verify(validToken({ jti }), REQUEST, ctx)).resolves.toMatchObject({ jti });
  });

  it("does not let one identity burn another identity's jti", async () => {
    const ctx = context();
    const jti = "shared-jti-0001";
    const malloryToken = validToken({
      handle: mallory.handle,
      did: mallory.did,
      privateKey: mallory.privateKey,
      jti,
    });
    await expect(verify(malloryToken, REQUEST, ctx)).resolves.toMatchObject({ sub: mallory.handle });
    await expect(verify(validToken({ jti }), REQUEST, ctx)).resolves.toMatchObject({ sub: alice.handle });
  });

  it("refuses every token while the replay cache is full", async () => {
    const replayCache = new MemoryReplayCache({ nowSeconds: () => NOW, maxEntries: 1 });
    await expect(verify(validToken(), REQUEST, context({ replayCache }))).resolves.toBeDefined();
    await expectRejected(verify(validToken(), REQUEST, context({ replayCache })), /already been used/);
  });

  it("never repeats the token in its error message", async () => {
    const token = validToken({ method: "DELETE" });
    await expectRejected(verify(token), undefined, token);
  });
});

describe("verifySelfSignedPopToken", () => {
  const selfContext = () => ({
    nowSeconds: NOW,
    replayCache: new MemoryReplayCache({ nowSeconds: () => NOW }),
  });

  it("verifies a token with the key named by its own iss, without any registry", async () => {
    const newcomer = generateIdentityKeyPair();
    const token = validToken({ handle: "new-agent", did: newcomer.did, privateKey: newcomer.privateKey });
    await expect(verifySelfSignedPopToken(token, REQUEST, selfContext())).resolves.toMatchObject({
      iss: newcomer.did,
      sub: "new-agent",
    });
  });

  it("refuses a token signed by a key other than the one its iss names", async () => {
    await expectRejected(
      verifySelfSignedPopToken(validToken({ did: mallory.did }), REQUEST, selfContext()),
      /signature is invalid/,
    );
  });

  it("refuses a token whose iss is not a valid Ed25519 did:key", async () => {
    const token = forge(VALID_HEADER, validClaims({ iss: "did:key:z6MkNotReallyAKey" }));
    await expectRejected(verifySelfSignedPopToken(token, REQUEST, selfContext()), /did:key/);
  });

  it("checks the claims and replay like verifyPopToken", async () => {
    const ctx = selfContext();
    const token = validToken();
    await expectRejected(verifySelfSignedPopToken(token, { ...REQUEST, method: "PUT" }, ctx), /HTTP method/);
    await expectRejected(
      verifySelfSignedPopToken(forge({ alg: "none" }, validClaims()), REQUEST, ctx),
      /algorithm/,
    );
    await expect(verifySelfSignedPopToken(token, REQUEST, ctx)).resolves.toBeDefined();
    await expectRejected(verifySelfSignedPopToken(token, REQUEST, ctx), /already been used/);
  });
});
