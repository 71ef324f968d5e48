import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection, Revoked } from "../../src/api/connections.ts";
import type { ResolvedCredential } from "../../src/api/credentials.ts";
import { NotFoundError, RefreshFailedError } from "../../src/core/errors.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { oauthProvider, staticClient, waitForSession } from "../support/oauth.ts";

let t: TestDaemon;
let server: AuthServer;
let counter = 0;
const fresh = (prefix: string) => `${prefix}${++counter}`;

beforeAll(async () => {
  [t, server] = await Promise.all([startTestDaemon(), startAuthServer({ accessTokenTtl: 3600 })]);
});
afterAll(async () => {
  await Promise.all([t.stop(), server.close()]);
});

const start = (provider: string, extra: Record<string, unknown> = {}) =>
  t.client.post<AuthSession>("/api/auth/sessions", { provider, ...extra });
const read = (session: AuthSession) => t.client.get<AuthSession>(`/api/auth/sessions/${session.session_id}`);
const revealed = (provider: string, connection = "default") =>
  t.client.get<Connection>(`/api/connections/${provider}/${connection}?reveal=true`);
const resolve = (provider: string, connection?: string) =>
  t.client.post<ResolvedCredential>("/api/credentials/resolve", {
    provider,
    ...(connection ? { connection } : {}),
  });

/** A PKCE provider with a static confidential client entered as JSON; returns the session waiting for sign-in. */
async function pkceSession(name: string, extra: Record<string, unknown> = {}): Promise<AuthSession> {
  await t.client.post("/api/providers", oauthProvider(name, server, "pkce"));
  const client = await staticClient(server, t.daemon.url);
  const session = await start(name, extra);
  expect(session).toMatchObject({ status: "pending", waiting_for: "client_credentials" });
  expect(session.redirect_uri).toBe(`${t.daemon.url}/auth/callback/oauth`);
  const ready = await t.client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/input`, client);
  expect(ready).toMatchObject({ status: "waiting_for_user", waiting_for: "authorization" });
  return ready;
}

describe("PKCE", () => {
  it("signs in through the browser, stores tokens, and resolves them as a Bearer header", async () => {
    const name = fresh("pkce");
    const session = await pkceSession(name);
    const authorize = new URL(session.next!.url);
    expect(authorize.origin).toBe(new URL(server.issuer).origin);
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorize.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get("redirect_uri")).toBe(session.redirect_uri);

    const page = await server.browser.authorize(session.next!.url);
    expect(page.status).toBe(200);
    expect(page.body).toMatch(/connected/);
    expect(await read(session)).toMatchObject({ status: "completed" });

    const stored = await revealed(name);
    expect(stored).toMatchObject({ auth_type: "oauth2", flow: "pkce", status: "active" });
    const credential = stored.credential as { access_token: string; refresh_token: string };
    expect(await server.isActive(credential.access_token)).toBe(true);
    expect(credential.refresh_token).toBeTruthy();
    expect(await resolve(name)).toMatchObject({
      header_name: "Authorization",
      header_value: `Bearer ${credential.access_token}`,
    });
    const { events } = await t.daemon.context.audit.query({ event: "provider.login" });
    expect(events.find((event) => event.provider === name)).toMatchObject({ status: "success" });
  });

  it("refuses a replayed or forged state and keeps the finished login as it was", async () => {
    const name = fresh("pkce");
    const session = await pkceSession(name);
    const first = await server.browser.authorize(session.next!.url);
    expect(first.status).toBe(200);
    const replay = await fetch(first.url);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toMatch(/already used|does not belong/);
    const forged = await fetch(`${t.daemon.url}/auth/callback/oauth?state=forged&code=abc`);
    expect(forged.status).toBe(400);
    expect(await read(session)).toMatchObject({ status: "completed" });
  });

  it("fails with the provider's words when the person denies access, and audits the failure", async () => {
    const name = fresh("pkce");
    const session = await pkceSession(name);
    const page = await server.browser.authorize(session.next!.url, { deny: true });
    expect(page.status).toBe(400);
    expect(page.body).toMatch(/access_denied/);
    const failed = await read(session);
    expect(failed).toMatchObject({ status: "failed", error: { error: "AuthenticationFailedError" } });
    expect(failed.error!.message).toMatch(/refused the login: access_denied/);
    const { events } = await t.daemon.context.audit.query({ event: "provider.login_failed" });
    expect(events.find((event) => event.provider === name)).toMatchObject({
      status: "failure",
      detail: { reason: "access_denied" },
    });
    await expect(revealed(name)).rejects.toThrow(/no connection/);
  });

  it("reuses the stored client for the next login without asking again", async () => {
    const name = fresh("pkce");
    const first = await pkceSession(name);
    await server.browser.authorize(first.next!.url);
    const second = await start(name, { connection: "work" });
    expect(second).toMatchObject({ status: "waiting_for_user", waiting_for: "authorization" });
    expect((await server.browser.authorize(second.next!.url)).status).toBe(200);
    expect((await revealed(name, "work")).status).toBe("active");
  });
});

describe("client credentials through the bridge form", () => {
  it("collects id and secret on the page, then links on to the sign-in", async () => {
    const name = fresh("form");
    await t.client.post("/api/providers", oauthProvider(name, server, "pkce"));
    const client = await staticClient(server, t.daemon.url, "client_secret_post");
    const session = await start(name);
    const formPage = await fetch(session.next!.url);
    const html = await formPage.text();
    expect(html).toContain(`value="${session.redirect_uri}"`);
    const field = (key: string) => new RegExp(`name="${key}" value="([^"]+)"`).exec(html)![1]!;
    const post = (body: Record<string, string>) =>
      fetch(new URL(`/api/auth/sessions/${session.session_id}/input`, t.daemon.url), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: t.daemon.url },
        body: new URLSearchParams(body).toString(),
      });
    const missingSecret = await post({
      token: field("token"),
      csrf: field("csrf"),
      client_id: client.client_id,
    });
    expect(missingSecret.status).toBe(400);
    expect(await missingSecret.text()).toMatch(/client secret/);

    const saved = await post({
      token: field("token"),
      csrf: field("csrf"),
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(saved.status).toBe(200);
    const continueHtml = await saved.text();
    expect(continueHtml).not.toContain(client.client_secret!);
    const link = /id="continue" href="([^"]+)"/.exec(continueHtml)![1]!.replaceAll("&amp;", "&");
    expect((await read(session)).next!.url).toBe(link);
    expect((await server.browser.authorize(link)).status).toBe(200);
    expect(await read(session)).toMatchObject({ status: "completed" });
    expect(server.tokenRequests.at(-1)).toMatchObject({ client_id: client.client_id, ok: true });
  });

  it("resume goes on once a client is stored, and says what is missing before", async () => {
    const name = fresh("resume");
    await t.client.post("/api/providers", oauthProvider(name, server, "pkce"));
    const client = await staticClient(server, t.daemon.url);
    const paused = await start(name);
    await expect(t.client.post(`/api/auth/sessions/${paused.session_id}/resume`)).rejects.toThrow(
      /still needs an OAuth client/,
    );
    // Another login stores the client meanwhile.
    const other = await start(name, { connection: "other" });
    await t.client.post(`/api/auth/sessions/${other.session_id}/input`, client);
    const resumed = await t.client.post<AuthSession>(`/api/auth/sessions/${paused.session_id}/resume`);
    expect(resumed).toMatchObject({ status: "waiting_for_user", waiting_for: "authorization" });
  });
});

describe("device code", () => {
  async function deviceSession(name: string): Promise<AuthSession> {
    await t.client.post(
      "/api/providers",
      oauthProvider(name, server, "device_code", {
        client_id: (await server.addClient({ token_endpoint_auth_method: "none" })).client_id,
      }),
    );
    const session = await start(name);
    expect(session).toMatchObject({ status: "waiting_for_user", waiting_for: "device_code" });
    expect(session.next!.url).toMatch(/\/device\?token=/);
    return session;
  }

  it("shows the code, polls in the background, and connects once approved", async () => {
    const name = fresh("device");
    const session = await deviceSession(name);
    const device = session.device!;
    expect(device.user_code).toBeTruthy();
    expect(Date.parse(device.expires_at)).toBeGreaterThan(Date.now() + 500_000);
    const page = await (await fetch(session.next!.url)).text();
    expect(page).toContain(device.user_code);
    expect(page).toContain(device.verification_uri);
    // The daemon keeps answering while it polls; approve after its first poll was told to wait.
    expect((await t.client.get<{ status: string }>("/api/health")).status).toBe("ok");
    const pending = () =>
      server.tokenRequests.filter((request) => request.error === "authorization_pending").length;
    const before = pending();
    for (let i = 0; i < 50 && pending() === before; i++) await sleep(100);
    expect(pending()).toBeGreaterThan(before);
    await server.browser.approveDevice(device.verification_uri, device.user_code);
    const done = await waitForSession(t.client, session, (current) => current.status === "completed");
    expect(done.device).toBeUndefined();
    expect((await revealed(name)).flow).toBe("device_code");
  });

  it("adds five seconds to the interval on slow_down", async () => {
    const name = fresh("device");
    server.slowDownNext(1);
    const session = await deviceSession(name);
    const slowed = await waitForSession(t.client, session, (current) => (current.device?.interval ?? 0) > 1);
    expect(slowed.device!.interval).toBe(session.device!.interval + 5);
    await t.client.post(`/api/auth/sessions/${session.session_id}/cancel`);
  });

  it("fails on access_denied", async () => {
    const name = fresh("device");
    const session = await deviceSession(name);
    await server.browser.approveDevice(session.device!.verification_uri, session.device!.user_code, {
      deny: true,
    });
    const failed = await waitForSession(t.client, session, (current) => current.status === "failed");
    expect(failed.error!.message).toMatch(/access_denied/);
  });
});

describe("DCR + PKCE with RFC 8414 discovery", () => {
  it("registers once at the discovered endpoint, keeps the client encrypted, and reuses it", async () => {
    const tenant = await startAuthServer({ mountPath: "/tenant", openidMetadata: false });
    try {
      const name = fresh("dcr");
      await t.client.post("/api/providers", oauthProvider(name, tenant, "dcr_pkce"));
      const first = await start(name);
      expect(first).toMatchObject({ status: "waiting_for_user", waiting_for: "authorization" });
      expect(tenant.registrations).toHaveLength(1);
      expect(tenant.registrations[0]!.redirect_uris).toEqual([first.redirect_uri]);
      expect((await tenant.browser.authorize(first.next!.url)).status).toBe(200);
      const second = await start(name, { connection: "second" });
      expect(new URL(second.next!.url).searchParams.get("client_id")).toBe(
        tenant.registrations[0]!.client_id,
      );
      expect(tenant.registrations).toHaveLength(1);
      expect((await tenant.browser.authorize(second.next!.url)).status).toBe(200);
      expect((await revealed(name, "second")).status).toBe("active");
    } finally {
      await tenant.close();
    }
  });

  it("says where it looked when the issuer publishes no metadata", async () => {
    const bare = await startAuthServer({ mountPath: "/bare", openidMetadata: false, oauthMetadata: false });
    try {
      const name = fresh("dcr");
      await t.client.post("/api/providers", oauthProvider(name, bare, "dcr_pkce"));
      await expect(start(name)).rejects.toThrow(/publishes no authorization server metadata/);
    } finally {
      await bare.close();
    }
  });
});

describe("refresh", () => {
  let short: AuthServer;
  beforeAll(async () => {
    short = await startAuthServer({ accessTokenTtl: 4 });
  });
  afterAll(async () => {
    await short.close();
  });

  /** A connection whose 4 s token is refreshed in the second half of its life (it is shorter than two margins). */
  async function connected(name: string) {
    await t.client.post("/api/providers", oauthProvider(name, short, "pkce"));
    const client = await staticClient(short, t.daemon.url);
    const session = await start(name);
    const ready = await t.client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/input`, client);
    expect((await short.browser.authorize(ready.next!.url)).status).toBe(200);
    const credential = (await revealed(name)).credential as { access_token: string; refresh_token: string };
    const already = refreshes().length;
    expect((await resolve(name)).header_value).toBe(`Bearer ${credential.access_token}`);
    expect(refreshes().length).toBe(already);
    await sleep(2100);
    return { client, credential };
  }
  const refreshes = () => short.tokenRequests.filter((request) => request.grant_type === "refresh_token");

  it("refreshes a token about to expire once for 50 concurrent resolves and stores the rotated refresh token", async () => {
    const name = fresh("refresh");
    const before = (await connected(name)).credential;
    const already = refreshes().length;
    const results = await Promise.all(Array.from({ length: 50 }, () => resolve(name)));
    expect(refreshes().length - already).toBe(1);
    const after = (await revealed(name)).credential as { access_token: string; refresh_token: string };
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    expect(new Set(results.map((result) => result.header_value))).toEqual(
      new Set([`Bearer ${after.access_token}`]),
    );
    expect(await short.isActive(after.access_token)).toBe(true);
    const { events } = await t.daemon.context.audit.query({ event: "provider.refreshed" });
    expect(events.find((event) => event.provider === name)).toMatchObject({
      status: "success",
      detail: { rotated: true },
    });
  });

  it("keeps and marks the connection when the refresh is refused, audits it, and does not ask again", async () => {
    const name = fresh("refresh");
    const { client, credential } = await connected(name);
    // Revoking the grant at the server makes the next refresh fail with invalid_grant.
    const revoked = await fetch(short.endpoints.revocation, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64")}`,
      },
      body: new URLSearchParams({ token: credential.refresh_token }).toString(),
    });
    expect(revoked.status).toBe(200);
    const already = refreshes().length;
    const error = await resolve(name).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RefreshFailedError);
    expect((error as Error).message).toMatch(/invalid_grant.*svc login .* --force/);
    const after = await revealed(name);
    expect(after).toMatchObject({ status: "refresh_failed" });
    expect(after.refresh_error).toMatch(/^invalid_grant/);
    const { events } = await t.daemon.context.audit.query({ event: "provider.refresh_failed" });
    expect(events.find((event) => event.provider === name)).toMatchObject({
      status: "failure",
      detail: { reason: "invalid_grant" },
    });
    await expect(resolve(name)).rejects.toBeInstanceOf(RefreshFailedError);
    expect(refreshes().length - already).toBe(1);
  });
});

describe("revocation", () => {
  it("revokes every connection's tokens at the server, then clears connections and the client", async () => {
    const name = fresh("revoke");
    const session = await pkceSession(name);
    await server.browser.authorize(session.next!.url);
    const credential = (await revealed(name)).credential as { access_token: string; refresh_token: string };
    const before = server.revocations.length;
    const result = await t.client.post<Revoked>(`/api/connections/${name}/revoke`);
    expect(result).toMatchObject({
      removed_connections: ["default"],
      removed_client_credentials: true,
      remote: [{ connection: "default", result: "revoked" }],
    });
    expect(server.revocations.length - before).toBeGreaterThanOrEqual(1);
    expect(await server.isActive(credential.refresh_token)).toBe(false);
    expect(await server.isActive(credential.access_token)).toBe(false);
    // The client went too: the next login asks for one again.
    expect(await start(name)).toMatchObject({ waiting_for: "client_credentials" });
  });
});

describe("a daemon restart mid-flow", () => {
  it("answers the old session and the browser's callback with a clear restart message", async () => {
    const name = fresh("restart");
    const session = await pkceSession(name);
    t = await t.restart();
    const callback = await server.browser.authorize(session.next!.url);
    expect(callback.status).toBe(400);
    expect(callback.body).toMatch(/svc restarted since this login began/);
    const error = await read(session).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toMatch(/the daemon restarted since this login began/);
  });
});
