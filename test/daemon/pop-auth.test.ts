import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { signRaw, standardClaims } from "../support/tokens.ts";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

const EDDSA = { alg: "EdDSA", typ: "svc-pop+jwt" };

async function call(path: string, token: string | undefined, init: { method?: string; body?: string } = {}) {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `PoP ${token}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${t.daemon.url}${path}`, {
    method: init.method ?? "GET",
    headers,
    body: init.body,
  });
  return { status: response.status, body: (await response.json()) as { error?: string; message?: string } };
}

function token(
  overrides: Record<string, unknown> = {},
  header: Record<string, unknown> = EDDSA,
  path = "/api/whoami",
) {
  return signRaw(
    header,
    standardClaims(t.identity, { method: "GET", path }, overrides),
    t.identity.privateKey,
  );
}

async function expectRefused(
  path: string,
  value: string | undefined,
  init?: { method?: string; body?: string },
) {
  const { status, body } = await call(path, value, init);
  expect(status).toBe(401);
  expect(body.error).toBe("AuthenticationFailedError");
  expect(body.message).toBeTruthy();
  return body.message!;
}

describe("PoP authentication on protected routes", () => {
  it("accepts a valid token and answers whoami for its identity", async () => {
    const { status, body } = await call("/api/whoami", token());
    expect(status).toBe(200);
    expect(body).toMatchObject({ identity: t.identity.handle, did: t.identity.did, principal_role: "admin" });
  });

  it("refuses a request with no Authorization header", async () => {
    await expectRefused("/api/whoami", undefined);
  });

  it("refuses a Bearer token in place of PoP", async () => {
    const response = await fetch(`${t.daemon.url}/api/whoami`, {
      headers: { authorization: `Bearer ${token()}` },
    });
    expect(response.status).toBe(401);
  });

  it("refuses a bad signature", async () => {
    const valid = token();
    const [h, p, s] = valid.split(".");
    const flipped = Buffer.from(s!, "base64url");
    flipped[0]! ^= 0xff;
    await expectRefused("/api/whoami", `${h}.${p}.${flipped.toString("base64url")}`);
  });

  it("refuses a token signed by a different key", async () => {
    const { privateKey } = generateKeyPairSync("ed25519");
    const forged = signRaw(
      EDDSA,
      standardClaims(t.identity, { method: "GET", path: "/api/whoami" }),
      privateKey,
    );
    await expectRefused("/api/whoami", forged);
  });

  it("refuses alg none", async () => {
    const claims = Buffer.from(
      JSON.stringify(standardClaims(t.identity, { method: "GET", path: "/api/whoami" })),
    );
    const header = Buffer.from(JSON.stringify({ alg: "none", typ: "svc-pop+jwt" }));
    await expectRefused("/api/whoami", `${header.toString("base64url")}.${claims.toString("base64url")}.`);
  });

  it("refuses HS256 and any alg but EdDSA", async () => {
    for (const alg of ["HS256", "ES256", "RS256", "eddsa", "Ed25519"]) {
      await expectRefused("/api/whoami", token({}, { alg, typ: "svc-pop+jwt" }));
    }
  });

  it("refuses an expired token", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused("/api/whoami", token({ iat: now - 40, exp: now - 5 }));
  });

  it("refuses iat more than 30 s in the future", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused("/api/whoami", token({ iat: now + 45, exp: now + 60 }));
  });

  it("refuses a lifetime over 60 s", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused("/api/whoami", token({ iat: now, exp: now + 61 }));
  });

  it("refuses a replayed token", async () => {
    const once = token();
    expect((await call("/api/whoami", once)).status).toBe(200);
    const message = await expectRefused("/api/whoami", once);
    expect(message).toMatch(/replay|already/i);
  });

  it("refuses a token minted for another method", async () => {
    await expectRefused("/api/whoami", token({ htm: "POST" }));
  });

  it("refuses a token minted for another path", async () => {
    await expectRefused("/api/ready", token());
  });

  it("refuses a token whose query differs from the request's", async () => {
    await expectRefused("/api/whoami?x=2", token({}, EDDSA, "/api/whoami?x=1"));
  });

  it("refuses a body that does not match body_sha256", async () => {
    const signed = JSON.stringify({ handle: t.identity.handle, did: t.identity.did });
    const pop = signPopToken({
      ...t.identity,
      method: "POST",
      pathAndQuery: "/api/identities",
      body: signed,
    });
    await expectRefused("/api/identities", pop, { method: "POST", body: `${signed} ` });
  });

  it("refuses an unknown handle", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const { didFromKey } = await import("../../src/identity/did-key.ts");
    const stranger = { handle: "unknown-stranger-1234", did: didFromKey(publicKey) };
    await expectRefused(
      "/api/whoami",
      signRaw(EDDSA, standardClaims(stranger, { method: "GET", path: "/api/whoami" }), privateKey),
    );
  });

  it("refuses an iss that is not the DID registered for sub", async () => {
    const other = await t.newIdentity();
    const claims = standardClaims(
      { handle: t.identity.handle, did: other.identity.did },
      { method: "GET", path: "/api/whoami" },
    );
    await expectRefused("/api/whoami", signRaw(EDDSA, claims, other.identity.privateKey));
  });

  it("refuses a token for another audience", async () => {
    await expectRefused("/api/whoami", token({ aud: "someone-else" }));
  });
});

describe("identity registration", () => {
  it("refuses to register a handle that is already registered to another key", async () => {
    const other = await t.newIdentity({ claim: false });
    const body = JSON.stringify({ handle: t.identity.handle, did: other.identity.did });
    const pop = signPopToken({
      handle: t.identity.handle,
      did: other.identity.did,
      privateKey: other.identity.privateKey,
      method: "POST",
      pathAndQuery: "/api/identities",
      body,
    });
    const response = await call("/api/identities", pop, { method: "POST", body });
    expect(response.status).toBe(403);
    expect(response.body.error).toBe("OperationNotAllowedError");
  });

  it("refuses a wrong local claim proof and leaves the identity unclaimed", async () => {
    const { identity, client } = await t.newIdentity({ claim: false });
    await expect(
      client.post("/api/identities", {
        handle: identity.handle,
        did: identity.did,
        local_claim_proof: "0".repeat(64),
      }),
    ).rejects.toMatchObject({ errorName: "AuthenticationFailedError" });
    const whoami = await client.get<{ principal_id?: string }>("/api/whoami");
    expect(whoami.principal_id).toBeUndefined();
  });

  it("claims later local identities for the same owner principal and vault", async () => {
    const first = await t.client.get<{ principal_id: string; vault_id: string }>("/api/whoami");
    const second = await t.newIdentity();
    const whoami = await second.client.get<{
      principal_id: string;
      vault_id: string;
      principal_role: string;
    }>("/api/whoami");
    expect(whoami.principal_id).toBe(first.principal_id);
    expect(whoami.vault_id).toBe(first.vault_id);
  });
});
