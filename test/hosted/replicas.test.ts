import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord, ExternalAuditEvent } from "../../src/api/audit.ts";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection } from "../../src/api/connections.ts";
import type { ResolvedCredential } from "../../src/api/credentials.ts";
import type { Readiness } from "../../src/api/health.ts";
import type { RegisteredIdentityRecord } from "../../src/api/identities.ts";
import type { DaemonClient } from "../../src/client/daemon-client.ts";
import { IdentityFiles } from "../../src/identity/identity-files.ts";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { SvcSandbox } from "../support/cli.ts";
import { customProvider, loginWithApiKey } from "../support/daemon.ts";
import { oauthProvider, staticClient, waitForSession } from "../support/oauth.ts";
import { type Replica, type ReplicaSet, startReplicaSet } from "../support/replicas.ts";
import { WebSession } from "../support/web-session.ts";

/**
 * Hosted mode: real daemon processes sharing one PostgreSQL schema and one Redis prefix behind a
 * load balancer must behave as one daemon.
 */
let set: ReplicaSet;
let a: Replica;
let b: Replica;
let server: AuthServer;

beforeAll(async () => {
  [set, server] = await Promise.all([startReplicaSet({ count: 2 }), startAuthServer({ accessTokenTtl: 4 })]);
  [a, b] = set.replicas as [Replica, Replica];
}, 90_000);
afterAll(async () => {
  await Promise.all([set?.dispose(), server?.close()]);
});

let counter = 0;
const fresh = (prefix: string) => `${prefix}${++counter}`;
/** A session that will not change any more. */
const finished = (session: AuthSession) =>
  !["pending", "waiting_for_user", "processing"].includes(session.status);
/** Alternates between the two replicas, request by request. */
const roundRobin = () => {
  let next = 0;
  return () => [a.url, b.url][next++ % 2]!;
};
const refreshes = () => server.tokenRequests.filter((request) => request.grant_type === "refresh_token");

/** An OAuth (PKCE) provider whose static client calls back to the balancer, registered through `via`. */
async function pkceProvider(name: string, via: DaemonClient): Promise<void> {
  const client = await staticClient(server, set.balancer.url, "none");
  await via.post("/api/providers", oauthProvider(name, server, "pkce", { client_id: client.client_id }));
}

describe("replicas on PostgreSQL and Redis", () => {
  it("start together, are ready, and show the shared store and Redis", async () => {
    for (const replica of [a, b]) {
      const ready = await replica.client.get<Readiness>("/api/ready");
      expect(ready.status, JSON.stringify(ready.issues)).toBe("ready");
      expect(ready.checks.redis).toBe("ok");
      expect(ready.store_backend).toMatch(/^PostgreSQL 127\.0\.0\.1:5432\/test/);
    }
    // Both ran the migrator at once; every migration is recorded exactly once.
    const db = new pg.Client({ connectionString: set.store.url });
    await db.connect();
    try {
      const { rows } = await db.query<{ name: string; copies: string }>(
        "select name, count(*) as copies from kysely_migration group by name",
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => Number(row.copies) === 1)).toBe(true);
    } finally {
      await db.end();
    }
  });

  it("completes on replica B, through the callback, an OAuth login started on replica A", async () => {
    const name = fresh("pkce");
    await pkceProvider(name, a.client);
    const session = await a.client.post<AuthSession>("/api/auth/sessions", { provider: name });
    expect(session).toMatchObject({ status: "waiting_for_user", waiting_for: "authorization" });
    expect(session.redirect_uri).toBe(`${set.balancer.url}/auth/callback/oauth`);

    // The provider sends the browser back to the public URL; the balancer hands it to B.
    set.balancer.pick = (incoming) => (incoming.url?.startsWith("/auth/callback/") ? b.url : a.url);
    const page = await server.browser.authorize(session.next!.url);
    expect(page.status).toBe(200);
    expect(page.body).toMatch(/connected/);
    expect(set.balancer.log.filter((entry) => entry.path.startsWith("/auth/callback/"))).toEqual([
      expect.objectContaining({ target: b.url }),
    ]);

    // A's long poll learns of it, and both replicas resolve the stored token.
    const done = await waitForSession(a.client, session, finished);
    expect(done.status).toBe("completed");
    const fromA = await a.client.post<ResolvedCredential>("/api/credentials/resolve", { provider: name });
    const fromB = await b.client.post<ResolvedCredential>("/api/credentials/resolve", { provider: name });
    expect(fromA.header_value).toMatch(/^Bearer \S+$/);
    expect(fromB.header_value).toBe(fromA.header_value);
  });

  it("wakes a long poll on A when B receives the API key", async () => {
    const session = await a.client.post<AuthSession>("/api/auth/sessions", {
      provider: "openai",
      connection: fresh("poll"),
    });
    const started = Date.now();
    const polled = a.client.get<AuthSession>(`/api/auth/sessions/${session.session_id}?wait=20`);
    await sleep(200);
    await b.client.post(`/api/auth/sessions/${session.session_id}/input`, {
      api_key: `sk-proj-${randomBytes(20).toString("hex")}`,
    });
    // The poll answers at the first change (processing or completed), long before its 20 s.
    const woken = await polled;
    expect(["processing", "completed"]).toContain(woken.status);
    expect(Date.now() - started).toBeLessThan(5_000);
    const done = await waitForSession(a.client, woken, finished);
    expect(done.status).toBe("completed");
  });

  it("sees at once on B the providers, connections and defaults changed on A", async () => {
    const name = fresh("custom");
    // B knows the provider list (and caches it) before A registers one.
    await b.client.get("/api/providers");
    await a.client.post("/api/providers", customProvider(name));
    const first = `sk-${randomBytes(20).toString("hex")}`;
    const second = `sk-${randomBytes(20).toString("hex")}`;
    await loginWithApiKey(b.client, name, first);
    const host = { host: `api.${name}.example.com`, path: "/v1/things" };
    expect((await b.client.post<ResolvedCredential>("/api/credentials/resolve", host)).header_value).toBe(
      `Bearer ${first}`,
    );
    await loginWithApiKey(a.client, name, second, { connection: "work" });
    await a.client.post(`/api/connections/${name}/work/default`, {});
    // B's cached index learns of the new default from A.
    const resolved = await b.client.post<ResolvedCredential>("/api/credentials/resolve", host);
    expect(resolved).toMatchObject({ connection: "work", header_value: `Bearer ${second}` });
  });

  it("claims through the public URL an identity registered elsewhere, whichever replica answers", async () => {
    set.balancer.pick = roundRobin();
    const remote = new IdentityFiles(join(a.layout.home, "elsewhere")).create();
    const client = set.clientAt(set.balancer.url, remote);
    const registered = await client.post<RegisteredIdentityRecord>("/api/identities", {
      handle: remote.handle,
      did: remote.did,
    });
    expect(registered.claim_url).toMatch(new RegExp(`^${set.balancer.url}/api/claim/`));
    const claimPath = new URL(registered.claim_url!).pathname;

    // Each request of this browser lands on the other replica than the one before.
    const browser = new WebSession(set.balancer.url);
    expect(
      (await browser.signIn(`claimer-${fresh("c")}@example.com`, "a long passphrase 1", true)).status,
    ).toBe(200);
    const page = await (await browser.request("GET", claimPath)).text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
    const confirmed = await browser.request("POST", `${claimPath}/confirm`, { form: { csrf_token: csrf } });
    expect(confirmed.status).toBe(200);
    const targets = new Set(set.balancer.log.slice(-4).map((entry) => entry.target));
    expect(targets).toEqual(new Set([a.url, b.url]));

    for (const replica of [a, b]) {
      const whoami = await set.clientAt(replica.url, remote).get<{ principal_role?: string }>("/api/whoami");
      expect(whoami.principal_role).toBe("user");
    }
    const reused = await browser.request("POST", `${claimPath}/confirm`, { form: { csrf_token: csrf } });
    expect(reused.status).toBe(400);
  });

  it("serves the real CLI through the public URL as one daemon", async () => {
    set.balancer.pick = roundRobin();
    const sandbox = await SvcSandbox.create({ SVC_BASE_URL: set.balancer.url });
    try {
      // The CLI proves its identity locally with the deployment's bootstrap secret.
      mkdirSync(join(sandbox.home, "server"), { recursive: true, mode: 0o700 });
      copyFileSync(a.layout.bootstrapSecret, join(sandbox.home, "server", "bootstrap.secret"));
      const key = `sk-proj-${randomBytes(20).toString("hex")}`;
      const since = set.balancer.log.length;
      const login = await sandbox.run(["login", "openai", "--connection", "cli"], { input: `${key}\n` });
      expect(login.code, login.stderr).toBe(0);
      const listed = await sandbox.run(["connections", "--json"]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ provider: "openai", connection: "cli" })]),
      );
      const log = await sandbox.run(["log", "--json", "-n", "5"]);
      expect(JSON.parse(log.stdout)).toEqual(
        expect.arrayContaining([expect.objectContaining({ event: "provider.login", connection: "cli" })]),
      );
      expect(new Set(set.balancer.log.slice(since).map((entry) => entry.target))).toEqual(
        new Set([a.url, b.url]),
      );
      expect(`${login.stdout}${login.stderr}${listed.stdout}${log.stdout}`).not.toContain(key);
    } finally {
      await sandbox.destroy();
    }
  });

  it("refuses on B a PoP token already used on A", async () => {
    const token = signPopToken({ ...set.identity, method: "GET", pathAndQuery: "/api/whoami" });
    const headers = { authorization: `PoP ${token}` };
    expect((await fetch(`${a.url}/api/whoami`, { headers })).status).toBe(200);
    const replayed = await fetch(`${b.url}/api/whoami`, { headers });
    expect(replayed.status).toBe(401);
    expect(await replayed.json()).toMatchObject({
      error: "AuthenticationFailedError",
      message: expect.stringMatching(/already been used/),
    });
  });

  it("refreshes a token once for 50 concurrent resolves spread over both replicas", async () => {
    const name = fresh("refresh");
    await pkceProvider(name, a.client);
    set.balancer.pick = () => a.url;
    const session = await a.client.post<AuthSession>("/api/auth/sessions", { provider: name });
    expect((await server.browser.authorize(session.next!.url)).status).toBe(200);
    const before = await a.client.get<Connection>(`/api/connections/${name}/default?reveal=true`);
    // The 4 s token is due for refresh in the second half of its life.
    await sleep(2_200);
    const already = refreshes().length;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        (index % 2 ? b : a).client.post<ResolvedCredential>("/api/credentials/resolve", { provider: name }),
      ),
    );
    expect(refreshes().length - already).toBe(1);
    const after = await b.client.get<Connection>(`/api/connections/${name}/default?reveal=true`);
    const token = (connection: Connection) =>
      (connection.credential as { access_token: string }).access_token;
    expect(token(after)).not.toBe(token(before));
    expect(new Set(results.map((result) => result.header_value))).toEqual(
      new Set([`Bearer ${token(after)}`]),
    );
  });

  it("finishes on another replica a device login whose polling replica was killed", async () => {
    const victim = await set.addReplica("device-victim");
    const name = fresh("device");
    const client = await server.addClient({ token_endpoint_auth_method: "none" });
    await victim.client.post(
      "/api/providers",
      oauthProvider(name, server, "device_code", { client_id: client.client_id }),
    );
    const session = await victim.client.post<AuthSession>("/api/auth/sessions", { provider: name });
    expect(session).toMatchObject({ status: "waiting_for_user", waiting_for: "device_code" });
    await victim.stop("SIGKILL");

    // The person enters the code after the replica that polled for it died.
    await server.browser.approveDevice(session.device!.verification_uri, session.device!.user_code);
    const done = await waitForSession(b.client, session, finished, 40_000);
    expect(done.status).toBe("completed");
    const resolved = await a.client.post<ResolvedCredential>("/api/credentials/resolve", { provider: name });
    expect(resolved.header_value).toMatch(/^Bearer \S+$/);
  }, 60_000);

  it("loses no committed connection or audit event when a replica is killed mid-traffic", async () => {
    const victim = await set.addReplica("victim");
    const committedConnections: string[] = [];
    const committedPaths: string[] = [];
    let stop = false;
    const worker = async (replica: Replica, id: number) => {
      for (let round = 0; !stop && round < 400; round++) {
        const connection = `kill-${id}-${round}`;
        const path = `/v1/kill/${id}/${round}`;
        const event: ExternalAuditEvent = {
          timestamp: new Date().toISOString(),
          event: "proxy.request",
          status: "success",
          provider: "openai",
          connection,
          detail: { method: "GET", host: "api.openai.com", path, status_code: 200, duration_ms: 1 },
        };
        try {
          await loginWithApiKey(replica.client, "openai", `sk-proj-${randomBytes(20).toString("hex")}`, {
            connection,
          });
          committedConnections.push(connection);
        } catch {
          // Not acknowledged: the replica died before answering, so nothing was promised.
        }
        try {
          await replica.client.post("/audit/events", { events: [event] });
          committedPaths.push(path);
        } catch {
          // as above
        }
      }
    };
    const traffic = [0, 1, 2].map((id) => worker(victim, id)).concat([3, 4].map((id) => worker(b, id)));
    // Kill it while requests are in flight.
    await sleep(1_500);
    // Workers 0-2 talk to the victim: it must have acknowledged work before it died.
    const committedByVictim = () => committedConnections.filter((name) => /^kill-[012]-/.test(name)).length;
    const committedBeforeKill = committedByVictim();
    await victim.stop("SIGKILL");
    await sleep(500);
    stop = true;
    await Promise.all(traffic);
    expect(committedBeforeKill).toBeGreaterThan(0);
    // After the kill nothing more was acknowledged by it; B went on.
    expect(committedByVictim() - committedBeforeKill).toBeLessThanOrEqual(3);
    expect(committedConnections.length).toBeGreaterThan(committedByVictim());

    const stored = await b.client.get<Connection[]>("/api/connections");
    const names = new Set(stored.map((connection) => connection.connection));
    expect(committedConnections.filter((name) => !names.has(name))).toEqual([]);

    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const page: AuditPageRecord = await b.client.get<AuditPageRecord>(
        `/api/audit/events?event=proxy.request&limit=500${cursor ? `&cursor=${cursor}` : ""}`,
      );
      for (const event of page.events) seen.add(String(event.detail?.path));
      cursor = page.next_cursor;
    } while (cursor);
    expect(committedPaths.filter((path) => !seen.has(path))).toEqual([]);
  }, 60_000);
});
