import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection, Revoked } from "../../src/api/connections.ts";
import type { ProviderDefinitionInput } from "../../src/providers/schema.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import type { SvcSandbox } from "../support/cli.ts";
import { loginLines, waitForLoginLine } from "../support/login-lines.ts";
import { oauthProvider, staticClient } from "../support/oauth.ts";
import { startProxiedSandbox, type Upstream } from "../support/upstream.ts";

const NODE = process.execPath;
/** The provider `svc run` reaches through the proxy (its API host is redirected to the local upstream). */
const RUN_PROVIDER = "oauthrun";

describe("svc login with OAuth, end to end against a real authorization server", () => {
  let proxied: Awaited<ReturnType<typeof startProxiedSandbox>>;
  let sandbox: SvcSandbox;
  let upstream: Upstream;
  let server: AuthServer;
  let callback: string;
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}${++counter}`;
  /** Every secret the tests saw: none may appear in a file under SVC_HOME or in CLI output. */
  const secrets = new Set<string>();
  const outputs: string[] = [];

  beforeAll(async () => {
    [proxied, server] = await Promise.all([
      startProxiedSandbox([`api.${RUN_PROVIDER}.example.com`]),
      startAuthServer({ accessTokenTtl: 4 }),
    ]);
    ({ sandbox, upstream } = proxied);
    expect((await sandbox.run(["whoami"])).code).toBe(0);
    callback = sandbox.baseUrl;
  });
  afterAll(async () => {
    await Promise.all([proxied?.close(), server?.close()]);
  });

  /** Revealed tokens of a connection (remembered as canaries). */
  async function tokens(provider: string, connection = "default") {
    const connections = await sandbox.json<Connection[]>(["connections", "list", "--provider", provider]);
    expect(connections.some((entry) => entry.connection === connection)).toBe(true);
    const revealed = await sandbox.json<Connection>([
      "connections",
      "inspect",
      provider,
      "--connection",
      connection,
      "--reveal",
    ]);
    const credential = revealed.credential as { access_token: string; refresh_token: string };
    secrets.add(credential.access_token);
    secrets.add(credential.refresh_token);
    return credential;
  }

  async function register(definition: ProviderDefinitionInput): Promise<void> {
    const file = join(sandbox.home, "..", `${definition.name}.json`);
    writeFileSync(file, JSON.stringify(definition));
    const result = await sandbox.run(["provider", "register", file, "--yes"]);
    expect(result.code, result.stderr).toBe(0);
  }

  /** A PKCE provider whose client was entered once through the bridge form. */
  async function pkceProvider(name: string): Promise<{ client_id: string; client_secret?: string }> {
    await register(oauthProvider(name, server, "pkce"));
    return staticClient(server, callback);
  }

  it("PKCE: asks for the client on the bridge form, then signs in through the browser", async () => {
    const name = fresh("pkce");
    const client = await pkceProvider(name);
    secrets.add(client.client_secret!);
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const paused = await waitForLoginLine(login, (line) => line.waiting_for === "client_credentials");
    expect(paused.status).toBe("pending");
    expect(paused.redirect_uri).toBe(`${callback}/auth/callback/oauth`);

    // The person fills in the bridge form.
    await enterClient(paused, client);

    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    expect(new URL(ready.next!.url).searchParams.get("code_challenge_method")).toBe("S256");
    const signedIn = await server.browser.authorize(ready.next!.url);
    expect(signedIn.status).toBe(200);
    const result = await login.result;
    expect(result.code, result.stderr).toBe(0);
    expect(loginLines(login).at(-1)).toMatchObject({ status: "completed", provider: name });
    expect(result.stdout + result.stderr).not.toContain(client.client_secret!);

    outputs.push(result.stdout, result.stderr);
    const listed = await sandbox.json<Connection[]>(["connections", "list", "--provider", name]);
    expect(listed).toEqual([expect.objectContaining({ flow: "pkce", status: "active", is_default: true })]);
    await tokens(name);

    // The browser's answer cannot be used twice: a replay is refused and changes nothing.
    const replayed = await fetch(signedIn.url);
    expect(replayed.status).toBe(400);
    expect(await replayed.text()).toMatch(/already used|does not belong/);
    expect((await sandbox.json<Connection[]>(["connections", "list", "--provider", name]))[0]!.status).toBe(
      "active",
    );
  });

  it("PKCE: access_denied exits 2 with the provider's words", async () => {
    const name = fresh("pkce");
    const client = await pkceProvider(name);
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const paused = await waitForLoginLine(login, (line) => line.waiting_for === "client_credentials");
    await enterClient(paused, client);
    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    const page = await server.browser.authorize(ready.next!.url, { deny: true });
    expect(page.status).toBe(400);
    const result = await login.result;
    expect(result.code).toBe(2);
    expect(loginLines(login).at(-1)).toMatchObject({ error: "AuthenticationFailedError" });
    expect(loginLines(login).at(-1)!.message).toMatch(/refused the login: access_denied/);
  });

  /** Enters the client on the bridge form of a paused session. */
  async function enterClient(paused: AuthSession, client: { client_id: string; client_secret?: string }) {
    const html = await (await fetch(paused.next!.url)).text();
    const field = (key: string) => new RegExp(`name="${key}" value="([^"]+)"`).exec(html)![1]!;
    const response = await fetch(new URL(`/api/auth/sessions/${paused.session_id}/input`, callback), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: callback },
      body: new URLSearchParams({
        token: field("token"),
        csrf: field("csrf"),
        client_id: client.client_id,
        ...(client.client_secret ? { client_secret: client.client_secret } : {}),
      }).toString(),
    });
    expect(response.status).toBe(200);
  }

  it("device code: prints the code, survives slow_down, and connects once approved", async () => {
    const name = fresh("device");
    const client = await server.addClient({ token_endpoint_auth_method: "none" });
    await register(oauthProvider(name, server, "device_code", { client_id: client.client_id }));
    server.slowDownNext(1);
    const login = sandbox.start(["login", name], { timeoutMs: 60_000 });
    const [, code, verification] = await login.waitFor("stderr", /Enter code (\S+) at (\S+)/);
    expect(new URL(verification!).origin).toBe(new URL(server.issuer).origin);
    // Approve only after the slow_down was answered, so the longer interval is exercised.
    for (let i = 0; i < 100 && !server.tokenRequests.some((r) => r.error === "slow_down"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(server.tokenRequests.some((request) => request.error === "slow_down")).toBe(true);
    await server.browser.approveDevice(verification!, code!);
    const result = await login.result;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/Connected/);
  }, 40_000);

  it("DCR + PKCE: registers itself through the issuer's metadata and signs in", async () => {
    const name = fresh("dcr");
    await register(oauthProvider(name, server, "dcr_pkce"));
    const before = server.registrations.length;
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    expect(server.registrations.length).toBe(before + 1);
    expect((await server.browser.authorize(ready.next!.url)).status).toBe(200);
    expect((await login.result).code).toBe(0);
  });

  it("an expiring token is refreshed once for 50 concurrent requests inside svc run, and the rotated token is kept", async () => {
    const client = await staticClient(server, callback);
    secrets.add(client.client_secret!);
    await register({
      ...oauthProvider(RUN_PROVIDER, server, "pkce"),
      api_url: `api.${RUN_PROVIDER}.example.com`,
    });
    const login = sandbox.start(["login", RUN_PROVIDER, "--json"], { timeoutMs: 60_000 });
    await enterClient(
      await waitForLoginLine(login, (line) => line.waiting_for === "client_credentials"),
      client,
    );
    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    expect((await server.browser.authorize(ready.next!.url)).status).toBe(200);
    expect((await login.result).code).toBe(0);
    const before = await tokens(RUN_PROVIDER);
    // The 4 s token enters its refresh window after 2 s.
    await new Promise((resolve) => setTimeout(resolve, 2200));
    const refreshes = () =>
      server.tokenRequests.filter((request) => request.grant_type === "refresh_token").length;
    const already = refreshes();
    const child = `
const answers = await Promise.all(Array.from({ length: 50 }, (_, i) =>
  fetch("https://api.${RUN_PROVIDER}.example.com/echo?t=refresh&i=" + i).then(async (r) => ({ status: r.status, auth: (await r.json()).headers.authorization }))));
console.log(JSON.stringify({ ok: answers.filter((a) => a.status === 200).length, auth: [...new Set(answers.map((a) => a.auth))] }));
`;
    const run = await sandbox.run(["run", "--", NODE, "--input-type=module", "-e", child], {
      timeoutMs: 60_000,
    });
    expect(run.code, run.stderr).toBe(0);
    outputs.push(run.stdout, run.stderr);
    expect(JSON.parse(run.stdout)).toEqual({ ok: 50, auth: ["svc-proxy-managed"] });
    expect(refreshes() - already).toBe(1);
    const after = await tokens(RUN_PROVIDER);
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.refresh_token).not.toBe(before.refresh_token);
    const seen = upstream.seen.filter((request) => request.url.includes("t=refresh"));
    expect(seen).toHaveLength(50);
    expect(new Set(seen.map((request) => request.headers.authorization))).toEqual(
      new Set([`Bearer ${after.access_token}`]),
    );
    expect(await server.isActive(after.refresh_token)).toBe(true);
  }, 60_000);

  it("provider revoke reaches the revocation endpoint and clears the connections", async () => {
    const { access_token, refresh_token } = await tokens(RUN_PROVIDER);
    const before = server.revocations.length;
    const result = await sandbox.run(["provider", "revoke", RUN_PROVIDER, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const revoked = JSON.parse(result.stdout) as Revoked;
    expect(revoked).toMatchObject({ removed_connections: ["default"], removed_client_credentials: true });
    expect(revoked.remote).toEqual([{ connection: "default", result: "revoked" }]);
    expect(server.revocations.length).toBeGreaterThan(before);
    expect(await server.isActive(refresh_token)).toBe(false);
    expect(await server.isActive(access_token)).toBe(false);
    expect(await sandbox.json<Connection[]>(["connections", "list", "--provider", RUN_PROVIDER])).toEqual([]);
  });

  it("Ctrl-C while waiting cancels the session at the daemon and exits 2", async () => {
    const name = fresh("sigint");
    await register(oauthProvider(name, server, "dcr_pkce"));
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 30_000 });
    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    login.kill("SIGINT");
    const result = await login.result;
    expect(result.code).toBe(2);
    expect(loginLines(login).at(-1)).toMatchObject({ error: "InputCancelledError" });
    // The sign-in link is dead: the daemon cancelled the session.
    const page = await server.browser.authorize(ready.next!.url);
    expect(page.status).toBe(400);
    expect(page.body).toMatch(/already used|does not belong|cancelled/);
  });

  it("a daemon restart mid-login ends the login with a clear message (exit 2)", async () => {
    const name = fresh("restart");
    await register(oauthProvider(name, server, "dcr_pkce"));
    const login = sandbox.start(["login", name, "--json"], { timeoutMs: 60_000 });
    const ready = await waitForLoginLine(login, (line) => line.waiting_for === "authorization");
    const restart = await sandbox.run(["daemon", "restart"]);
    expect(restart.code, restart.stderr).toBe(0);
    const page = await server.browser.authorize(ready.next!.url);
    expect(page.status).toBe(400);
    expect(page.body).toMatch(/svc restarted since this login began/);
    const result = await login.result;
    expect(result.code).toBe(2);
    expect(result.stdout + result.stderr).toMatch(/daemon restarted/);
  }, 60_000);

  it("leaves no token or client secret in any file under SVC_HOME or in what the CLI printed", () => {
    expect(secrets.size).toBeGreaterThan(4);
    const files = sandbox.files();
    for (const secret of secrets) {
      for (const file of files)
        expect(file.content.includes(secret), `${secret.slice(0, 4)}… in ${file.path}`).toBe(false);
      for (const output of outputs) expect(output).not.toContain(secret);
    }
  });
});
