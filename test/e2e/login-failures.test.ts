/**
 * Failures reach whoever waits: an auth session that fails (client credentials the provider
 * refuses, a provider that does not answer, a refused token exchange, a code never entered) ends
 * `svc login` at once with the spec's exit code and the provider's words, as the last `--json`
 * line, and the session the dashboard's Connect dialog follows says the same.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import { clientFor, loadActiveIdentity } from "../../src/client/session.ts";
import { homeLayout } from "../../src/core/paths.ts";
import type { ProviderDefinitionInput } from "../../src/providers/schema.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { freePort, type RunningCli, SvcSandbox } from "../support/cli.ts";
import { loginLines, waitForLoginLine } from "../support/login-lines.ts";
import { oauthProvider, staticClient } from "../support/oauth.ts";

describe("a failed auth session ends svc login at once", () => {
  let sandbox: SvcSandbox;
  let server: AuthServer;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}${++counter}`;

  beforeAll(async () => {
    [sandbox, server] = await Promise.all([
      SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" }),
      startAuthServer({ deviceCodeTtl: 2 }),
    ]);
    expect((await sandbox.run(["whoami"])).code).toBe(0);
  });
  afterAll(async () => {
    await Promise.all([sandbox?.destroy(), server?.close()]);
  });

  async function register(definition: ProviderDefinitionInput): Promise<void> {
    const file = join(sandbox.home, "..", `${definition.name}.json`);
    writeFileSync(file, JSON.stringify(definition));
    const result = await sandbox.run(["provider", "register", file, "--yes"]);
    expect(result.code, result.stderr).toBe(0);
  }

  /** Posts the client id and secret on the bridge form of a paused session; returns the page. */
  async function enterClient(paused: AuthSession, client: { client_id: string; client_secret: string }) {
    const html = await (await fetch(paused.next!.url)).text();
    const field = (key: string) => new RegExp(`name="${key}" value="([^"]+)"`).exec(html)![1]!;
    const response = await fetch(new URL(`/api/auth/sessions/${paused.session_id}/input`, sandbox.baseUrl), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: sandbox.baseUrl },
      body: new URLSearchParams({ token: field("token"), csrf: field("csrf"), ...client }).toString(),
    });
    return { status: response.status, html: await response.text() };
  }

  /** The session as the dashboard's Connect dialog follows it (`GET /api/auth/sessions/{id}`). */
  async function sessionSeenByDashboard(id: string): Promise<AuthSession> {
    const layout = homeLayout(sandbox.home);
    const client = clientFor(layout, sandbox.env, loadActiveIdentity(layout)!);
    return client.get<AuthSession>(`/api/auth/sessions/${id}`);
  }

  /** The login's end: its exit code, its last --json line, and how long it took after `since`. */
  async function ended(login: RunningCli, since: number) {
    const result = await login.result;
    return {
      code: result.code,
      last: loginLines(login).at(-1)!,
      ms: Date.now() - since,
      stderr: result.stderr,
    };
  }

  it("client credentials the provider refuses: exit 2 with the provider's words, on the page too", async () => {
    const name = fresh("refused");
    await register(oauthProvider(name, server, "device_code"));
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const paused = await waitForLoginLine(login, (line) => line.waiting_for === "client_credentials");
    const since = Date.now();
    const page = await enterClient(paused, { client_id: "no-such-client", client_secret: "wrong-secret" });
    const end = await ended(login, since);
    expect(end.code, end.stderr).toBe(2);
    expect(end.ms).toBeLessThan(10_000);
    expect(end.last).toMatchObject({ error: "AuthenticationFailedError" });
    expect(end.last.message).toMatch(/invalid_client/);
    expect(page.html).toContain("invalid_client");
    const seen = await sessionSeenByDashboard(paused.session_id);
    expect(seen).toMatchObject({ status: "failed", error: { message: end.last.message } });
  });

  it("a provider that does not answer the client's first request: exit 8, no spinning", async () => {
    const name = fresh("unreachable");
    const closed = `http://127.0.0.1:${await freePort()}`;
    await register(
      oauthProvider(name, server, "device_code", {
        device_authorization_url: `${closed}/device`,
        token_url: `${closed}/token`,
      }),
    );
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const paused = await waitForLoginLine(login, (line) => line.waiting_for === "client_credentials");
    const since = Date.now();
    const page = await enterClient(paused, { client_id: "some-client", client_secret: "some-secret" });
    const end = await ended(login, since);
    expect(end.code, end.stderr).toBe(8);
    expect(end.ms).toBeLessThan(10_000);
    expect(end.last).toMatchObject({ error: "EndpointUnreachableError" });
    expect(page.html).toContain(end.last.message!.split(":")[0]!);
    const seen = await sessionSeenByDashboard(paused.session_id);
    expect(seen).toMatchObject({ status: "failed", error: { error: "EndpointUnreachableError" } });
  });

  it("a token exchange the provider refuses: exit 2 with the provider's words", async () => {
    const name = fresh("exchange");
    await register(oauthProvider(name, server, "pkce"));
    const client = await staticClient(server, sandbox.baseUrl);
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const paused = await waitForLoginLine(login, (line) => line.waiting_for === "client_credentials");
    // The right client id with a wrong secret: the sign-in works, the code exchange is refused.
    await enterClient(paused, { client_id: client.client_id, client_secret: "not-the-secret" });
    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    const since = Date.now();
    await server.browser.authorize(ready.next!.url);
    const end = await ended(login, since);
    expect(end.code, end.stderr).toBe(2);
    expect(end.ms).toBeLessThan(10_000);
    expect(end.last).toMatchObject({ error: "AuthenticationFailedError" });
    expect(end.last.message).toMatch(/invalid_client/);
    const seen = await sessionSeenByDashboard(paused.session_id);
    expect(seen).toMatchObject({ status: "failed", error: { message: end.last.message } });
  });

  it("a device code nobody entered in time: the login expires with exit 2 and says so", async () => {
    const name = fresh("expiring");
    const client = await server.addClient({ token_endpoint_auth_method: "none" });
    await register(oauthProvider(name, server, "device_code", { client_id: client.client_id }));
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const waiting = await waitForLoginLine(login, (line) => line.waiting_for === "device_code");
    const end = await ended(login, Date.now());
    expect(end.code, end.stderr).toBe(2);
    // Nobody finished it: exit 2 as for a cancelled input, with what to do.
    expect(end.last).toMatchObject({ error: "InputCancelledError" });
    expect(end.last.message).toMatch(/not completed in time; start it again/);
    const seen = await sessionSeenByDashboard(waiting.session_id);
    expect(seen).toMatchObject({ status: "expired", error: { message: end.last.message } });
  });
});
