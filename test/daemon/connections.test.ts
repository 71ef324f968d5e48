import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection, LoggedOut, Revoked } from "../../src/api/connections.ts";
import type { ResolvedCredential } from "../../src/api/credentials.ts";
import {
  ConnectionAlreadyExistsError,
  ConnectionNotFoundError,
  OperationNotAllowedError,
  ProviderNotFoundError,
} from "../../src/core/errors.ts";
import { loginWithApiKey, signedFetch, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

const openaiKey = () => `sk-test-${randomBytes(12).toString("hex")}`;
const connections = (provider?: string) =>
  t.client.get<Connection[]>(`/api/connections${provider ? `?provider=${provider}` : ""}`);
const connection = (provider: string, name: string, reveal = false) =>
  t.client.get<Connection>(`/api/connections/${provider}/${name}${reveal ? "?reveal=true" : ""}`);
const logout = (provider: string, name: string) =>
  t.client.post<LoggedOut>(`/api/connections/${provider}/${name}/logout`);

describe("connections made with an API key", () => {
  const key = openaiKey();

  it("stores the key and lists the connection redacted, as the default", async () => {
    const session = await loginWithApiKey(t.client, "openai", key);
    expect(session.status).toBe("completed");

    const list = await connections();
    expect(list).toEqual([
      {
        provider: "openai",
        connection: "default",
        auth_type: "api_key",
        flow: "api_key",
        is_default: true,
        status: "active",
        created_at: expect.any(String),
        updated_at: expect.any(String),
        expires_at: null,
        credential: { type: "api_key", redacted: `••••${key.slice(-4)}` },
      },
    ]);
    expect(JSON.stringify(list)).not.toContain(key);
    const one = await connection("openai", "default");
    expect(one).toEqual(list[0]);
    expect(JSON.stringify(one)).not.toContain(key);
    expect(await connections("anthropic")).toEqual([]);
    await expect(connections("opnai")).rejects.toBeInstanceOf(ProviderNotFoundError);
  });

  it("reveals the key only with reveal=true, uncached and audited", async () => {
    const response = await signedFetch<Connection>(
      t.daemon.url,
      t.identity,
      "GET",
      "/api/connections/openai/default?reveal=true",
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.body.credential).toEqual({
      type: "api_key",
      redacted: `••••${key.slice(-4)}`,
      api_key: key,
    });
    const { events } = await t.daemon.context.audit.query({ event: "credential.revealed" });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      event: "credential.revealed",
      status: "success",
      provider: "openai",
      connection: "default",
      identity: t.identity.handle,
    });
    expect(JSON.stringify(events)).not.toContain(key);
  });

  it("refuses a second login to an existing connection without force, before asking for a key", async () => {
    const error = await t.client
      .post("/api/auth/sessions", { provider: "openai" })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectionAlreadyExistsError);
    expect((error as Error).message).toMatch(/openai already has a connection "default"; .*--force/);
  });

  it("replaces the key with force and keeps created_at", async () => {
    const before = await connection("openai", "default");
    await sleep(5);
    const replacement = openaiKey();
    const session = await loginWithApiKey(t.client, "openai", replacement, { force: true });
    expect(session.status).toBe("completed");
    const after = await connection("openai", "default", true);
    expect(after.created_at).toBe(before.created_at);
    expect(after.updated_at > before.updated_at).toBe(true);
    expect(after.credential).toMatchObject({ api_key: replacement });
    expect(after.is_default).toBe(true);
    expect(await connections("openai")).toHaveLength(1);
  });

  it("moves the default, promotes the oldest on logout of the default, and empties to null", async () => {
    for (const name of ["work", "personal"]) {
      await sleep(5);
      await loginWithApiKey(t.client, "openai", openaiKey(), { connection: name });
    }
    const defaultOf = async () =>
      (await connections("openai")).filter((entry) => entry.is_default).map((entry) => entry.connection);
    expect(await defaultOf()).toEqual(["default"]);

    const moved = await t.client.post<Connection>("/api/connections/openai/personal/default");
    expect(moved).toMatchObject({ connection: "personal", is_default: true });
    expect(JSON.stringify(moved)).not.toMatch(/sk-test-/);
    expect(await defaultOf()).toEqual(["personal"]);
    expect((await connection("openai", "default")).is_default).toBe(false);

    // Removing the default hands it to the oldest remaining one ("default", created first).
    expect(await logout("openai", "personal")).toEqual({
      provider: "openai",
      connection: "personal",
      removed: true,
      default_connection: "default",
    });
    expect(await defaultOf()).toEqual(["default"]);
    // Removing one that is not the default leaves the default alone.
    expect((await logout("openai", "work")).default_connection).toBe("default");
    expect((await logout("openai", "default")).default_connection).toBeNull();
    expect(await connections("openai")).toEqual([]);
  });

  it("answers logout, default and get of an absent connection with ConnectionNotFoundError", async () => {
    const error = await logout("openai", "nope").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectionNotFoundError);
    expect((error as Error).message).toMatch(
      /no connection "nope" for openai; run `svc login openai --connection nope`/,
    );
    await expect(t.client.post("/api/connections/openai/nope/default")).rejects.toBeInstanceOf(
      ConnectionNotFoundError,
    );
    await loginWithApiKey(t.client, "openai", openaiKey(), { connection: "exists" });
    await expect(connection("openai", "nope")).rejects.toThrow(/openai has "exists"/);
    await expect(logout("opnai", "exists")).rejects.toBeInstanceOf(ProviderNotFoundError);
    await logout("openai", "exists");
  });

  it("revokes every connection of a provider, reporting API keys as not revocable remotely", async () => {
    await loginWithApiKey(t.client, "openai", openaiKey(), { connection: "a" });
    await loginWithApiKey(t.client, "openai", openaiKey(), { connection: "b" });
    await loginWithApiKey(t.client, "anthropic", `sk-ant-${randomBytes(8).toString("hex")}`);
    const revoked = await t.client.post<Revoked>("/api/connections/openai/revoke");
    expect(revoked).toEqual({
      provider: "openai",
      removed_connections: ["a", "b"],
      removed_client_credentials: false,
      remote: [
        { connection: "a", result: "not_supported", message: expect.stringMatching(/console/) },
        { connection: "b", result: "not_supported", message: expect.stringMatching(/console/) },
      ],
    });
    expect(await connections("openai")).toEqual([]);
    expect((await connections()).map((entry) => entry.provider)).toEqual(["anthropic"]);
    await expect(
      t.client.post<ResolvedCredential>("/api/credentials/resolve", { host: "api.openai.com" }),
    ).rejects.toBeInstanceOf(ConnectionNotFoundError);
    // A revoke with nothing left is not an error.
    expect((await t.client.post<Revoked>("/api/connections/openai/revoke")).removed_connections).toEqual([]);
    await t.client.post("/api/connections/anthropic/revoke");
  });

  it("asks for an OAuth client first when the provider publishes none, and stores nothing yet", async () => {
    const session = await t.client.post<AuthSession>("/api/auth/sessions", { provider: "github" });
    expect(session).toMatchObject({
      status: "pending",
      waiting_for: "client_credentials",
      flow: "device_code",
    });
    expect(session.next?.url).toMatch(/\/api\/auth\/sessions\/ses_[^/]+\/input\?token=/);
    expect(await connections("github")).toEqual([]);
    await t.client.post(`/api/auth/sessions/${session.session_id}/cancel`);
  });
});

describe("an identity no principal has claimed", () => {
  it("is refused on every connection route", async () => {
    const stranger = await t.newIdentity({ claim: false });
    const attempts: Array<Promise<unknown>> = [
      stranger.client.get("/api/connections"),
      stranger.client.get("/api/connections/openai/default"),
      stranger.client.post("/api/connections/openai/default/logout"),
      stranger.client.post("/api/connections/openai/default/default"),
      stranger.client.post("/api/connections/openai/revoke"),
      stranger.client.post("/api/auth/sessions", { provider: "openai" }),
      stranger.client.get("/api/proxy/routes"),
      stranger.client.post("/api/credentials/resolve", { host: "api.openai.com" }),
    ];
    for (const attempt of attempts) {
      const error = await attempt.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OperationNotAllowedError);
      expect((error as Error).message).toMatch(/not claimed by an account, so it has no vault/);
    }
  });
});

describe("concurrent logins", () => {
  it("stores fifty parallel logins to one provider with exactly one default", async () => {
    const names = Array.from({ length: 50 }, (_, index) => `parallel-${index}`);
    const sessions = await Promise.all(
      names.map((name) => loginWithApiKey(t.client, "openai", openaiKey(), { connection: name })),
    );
    expect(sessions.map((session) => session.status)).toEqual(Array(50).fill("completed"));
    const list = await connections("openai");
    expect(list.map((entry) => entry.connection).sort()).toEqual([...names].sort());
    expect(list.filter((entry) => entry.is_default)).toHaveLength(1);
    const resolved = await t.client.post<ResolvedCredential>("/api/credentials/resolve", {
      host: "api.openai.com",
    });
    expect(resolved.connection).toBe(list.find((entry) => entry.is_default)!.connection);
    await t.client.post("/api/connections/openai/revoke");
  });

  it("lets exactly one of two concurrent first logins to the same name win", async () => {
    const create = () =>
      t.client.post<AuthSession>("/api/auth/sessions", { provider: "openai", connection: "race" });
    const [first, second] = await Promise.all([create(), create()]);
    const keys = [openaiKey(), openaiKey()];
    const results = await Promise.allSettled([
      t.client.post<AuthSession>(`/api/auth/sessions/${first.session_id}/input`, { api_key: keys[0] }),
      t.client.post<AuthSession>(`/api/auth/sessions/${second.session_id}/input`, { api_key: keys[1] }),
    ]);
    const won = results.filter((result) => result.status === "fulfilled");
    const lost = results.filter((result) => result.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConnectionAlreadyExistsError);
    const winner = results.indexOf(won[0]!);
    const stored = await connection("openai", "race", true);
    expect(stored.credential).toMatchObject({ api_key: keys[winner] });
    const loser = [first, second][1 - winner]!;
    const failed = await t.client.get<AuthSession>(`/api/auth/sessions/${loser.session_id}`);
    expect(failed).toMatchObject({ status: "failed", error: { error: "ConnectionAlreadyExistsError" } });
    await t.client.post("/api/connections/openai/revoke");
  });
});

describe("connections across a restart", () => {
  it("survive a restart with the same SVC_MASTER_KEY and still resolve", async () => {
    const own = await startTestDaemon({ SVC_MASTER_KEY: randomBytes(32).toString("base64") });
    let current = own;
    try {
      const key = openaiKey();
      await loginWithApiKey(current.client, "openai", key);
      current = await current.restart();
      expect(current.env.SVC_MASTER_KEY).toBe(own.env.SVC_MASTER_KEY);
      const list = await current.client.get<Connection[]>("/api/connections");
      expect(list.map((entry) => [entry.connection, entry.is_default])).toEqual([["default", true]]);
      const resolved = await current.client.post<ResolvedCredential>("/api/credentials/resolve", {
        host: "api.openai.com",
      });
      expect(resolved.header_value).toBe(`Bearer ${key}`);
    } finally {
      await current.stop();
    }
  });
});

describe("comparing an API key with the stored one", () => {
  it("says whether they are equal without revealing or auditing anything", async () => {
    const key = openaiKey();
    await loginWithApiKey(t.client, "openai", key, { connection: "compared" });
    const before = (await t.daemon.context.audit.query({ limit: 500 })).events.length;
    const compare = (api_key: string) =>
      t.client.post<{ same: boolean }>("/api/connections/openai/compared/compare", { api_key });
    expect(await compare(key)).toEqual({ same: true });
    expect(await compare(`${key}x`)).toEqual({ same: false });
    expect(await compare(key.slice(0, -1))).toEqual({ same: false });
    expect((await t.daemon.context.audit.query({ limit: 500 })).events.length).toBe(before);
    await expect(
      t.client.post("/api/connections/openai/missing/compare", { api_key: key }),
    ).rejects.toBeInstanceOf(ConnectionNotFoundError);
  });
});
