/**
 * An OAuth connection whose access token has expired: the library's `headers` and `fetch` get a
 * fresh one, refreshed by the daemon at a real authorization server (oidc-provider).
 */
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection } from "../../src/api/connections.ts";
import { updateClientConfig } from "../../src/client/config.ts";
import { createClient, RefreshFailedError } from "../../src/client/index.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { connectToFetch } from "../support/connect-fetch.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { oauthProvider, staticClient } from "../support/oauth.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";

/** Access tokens live 2 s: long enough to sign in, short enough to wait out. */
const TOKEN_TTL_SECONDS = 2;

let t: TestDaemon;
let server: AuthServer;
let upstream: Upstream;

beforeAll(async () => {
  [t, server, upstream] = await Promise.all([
    startTestDaemon(),
    startAuthServer({ accessTokenTtl: TOKEN_TTL_SECONDS }),
    startUpstream(),
  ]);
  updateClientConfig(t.layout.clientConfig, { active_identity: t.identity.handle });
});
afterAll(async () => {
  await Promise.all([t?.stop(), server?.close(), upstream?.close()]);
});

/** Signs in to a new PKCE provider backed by the test server; returns the stored tokens. */
async function connect(name: string) {
  await t.client.post("/api/providers", oauthProvider(name, server, "pkce"));
  const client = await staticClient(server, t.daemon.url);
  const started = await t.client.post<AuthSession>("/api/auth/sessions", { provider: name });
  const ready = await t.client.post<AuthSession>(`/api/auth/sessions/${started.session_id}/input`, client);
  expect((await server.browser.authorize(ready.next!.url)).status).toBe(200);
  const stored = await t.client.get<Connection>(`/api/connections/${name}/default?reveal=true`);
  return { client, ...(stored.credential as { access_token: string; refresh_token: string }) };
}

const refreshes = () => server.tokenRequests.filter((request) => request.grant_type === "refresh_token");

it("hands out a refreshed token once the old one has expired, to headers and to fetch", async () => {
  const name = "lib-oauth";
  const host = `api.${name}.example.com`;
  const before = await connect(name);
  const svc = createClient({
    env: { SVC_HOME: t.layout.home, SVC_BASE_URL: t.daemon.url },
    fetch: connectToFetch(upstream.connectTo([host]), readFileSync(upstream.caPath, "utf8")),
  });
  expect(await svc.headers(name)).toEqual({ Authorization: `Bearer ${before.access_token}` });

  await sleep(TOKEN_TTL_SECONDS * 1000 + 200);
  expect(await server.isActive(before.access_token)).toBe(false);
  const already = refreshes().length;
  const response = await svc.fetch(`https://${host}/echo?t=refreshed`);
  expect(response.status).toBe(200);
  expect(refreshes().length - already).toBe(1);

  const sent = upstream.seen.find((seen) => seen.url.includes("t=refreshed"))!.headers
    .authorization as string;
  expect(sent).toMatch(/^Bearer /);
  expect(sent).not.toBe(`Bearer ${before.access_token}`);
  expect(await server.isActive(sent.slice("Bearer ".length))).toBe(true);
  expect(await svc.headers(name)).toEqual({ Authorization: sent });
});

it("reports a refused refresh as RefreshFailedError, with the login to run", async () => {
  const name = "lib-oauth-revoked";
  const tokens = await connect(name);
  // Revoking the grant at the server makes the next refresh fail with invalid_grant.
  const revoked = await fetch(server.endpoints.revocation, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${tokens.client.client_id}:${tokens.client.client_secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ token: tokens.refresh_token }).toString(),
  });
  expect(revoked.status).toBe(200);
  await sleep(TOKEN_TTL_SECONDS * 1000 + 200);
  const svc = createClient({ env: { SVC_HOME: t.layout.home, SVC_BASE_URL: t.daemon.url } });
  const error = await svc.headers(name).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(RefreshFailedError);
  expect((error as Error).message).toMatch(/svc login .* --force/);
  expect((error as Error).message).not.toContain(tokens.refresh_token);
});
