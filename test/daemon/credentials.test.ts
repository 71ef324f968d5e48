import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection } from "../../src/api/connections.ts";
import type { ProxyRoute, ResolvedCredential, ResolveRequest } from "../../src/api/credentials.ts";
import {
  ConnectionNotFoundError,
  InvalidInputError,
  OperationNotAllowedError,
  ProviderNotFoundError,
} from "../../src/core/errors.ts";
import type { ProviderSummary } from "../../src/providers/schema.ts";
import {
  customProvider,
  loginWithApiKey,
  signedFetch,
  startTestDaemon,
  type TestDaemon,
  type TestIdentity,
} from "../support/daemon.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

describe("credential routing and resolve", () => {
  let t: TestDaemon;
  const keys = {
    openai: `sk-proj-${hex(16)}`,
    openaiWork: `sk-work-${hex(16)}`,
    anthropic: `sk-ant-api03-${hex(16)}`,
    githubToken: `ghp_${hex(18)}`,
    mirror: `mirror-${hex(16)}`,
    repos: `repos-${hex(16)}`,
  };

  const resolve = (request: ResolveRequest, client = t.client) =>
    client.post<ResolvedCredential>("/api/credentials/resolve", request);
  const failure = (request: ResolveRequest, client = t.client) =>
    resolve(request, client).then(
      () => expect.unreachable("resolve should have been refused"),
      (error: unknown) => error as Error,
    );

  beforeAll(async () => {
    t = await startTestDaemon();
    await loginWithApiKey(t.client, "openai", keys.openai);
    await loginWithApiKey(t.client, "openai", keys.openaiWork, { connection: "work" });
    await loginWithApiKey(t.client, "anthropic", keys.anthropic);
  });
  afterAll(async () => {
    await t.stop();
  });

  describe("GET /api/proxy/routes", () => {
    let routes: ProxyRoute[];
    const route = (name: string) => routes.find((entry) => entry.provider === name)!;
    beforeAll(async () => {
      routes = (await t.client.get<{ routes: ProxyRoute[] }>("/api/proxy/routes")).routes;
    });

    it("lists every provider", async () => {
      const providers = await t.client.get<ProviderSummary[]>("/api/providers");
      expect(routes.map((entry) => entry.provider)).toEqual(providers.map((provider) => provider.name));
    });

    it("carries API URLs, OAuth endpoints, header names and env per provider", () => {
      expect(route("github")).toEqual({
        provider: "github",
        auth_type: "oauth2",
        api_url: ["api.github.com", "uploads.github.com"],
        oauth_endpoints: [
          "https://github.com/login/oauth/access_token",
          "https://github.com/login/device/code",
        ],
        header_name: "Authorization",
        env: ["GITHUB_TOKEN", "GH_TOKEN"],
        connections: [],
        default_connection: null,
      });
      expect(route("anthropic")).toMatchObject({
        api_url: ["api.anthropic.com"],
        oauth_endpoints: [],
        header_name: "x-api-key",
        env: ["ANTHROPIC_API_KEY"],
      });
      // A multi-tenant provider's {base_url} entries appear resolved with its default base URL.
      expect(route("gitlab").api_url).toEqual(["https://gitlab.com/api"]);
      expect(route("gitlab").oauth_endpoints).toContain("https://gitlab.com/oauth/token");
    });

    it("shows the caller's connections and defaults", () => {
      expect(route("openai")).toMatchObject({
        api_url: ["api.openai.com"],
        header_name: "Authorization",
        connections: ["default", "work"],
        default_connection: "default",
      });
      expect(route("anthropic")).toMatchObject({ connections: ["default"], default_connection: "default" });
      expect(JSON.stringify(routes)).not.toContain(keys.openai);
    });
  });

  describe("POST /api/credentials/resolve", () => {
    it("resolves api.openai.com to a Bearer header of the default connection, never cached", async () => {
      const response = await signedFetch<ResolvedCredential>(
        t.daemon.url,
        t.identity,
        "POST",
        "/api/credentials/resolve",
        { host: "api.openai.com", path: "/v1/models" },
      );
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.body).toEqual({
        provider: "openai",
        connection: "default",
        header_name: "Authorization",
        header_value: `Bearer ${keys.openai}`,
        expires_at: null,
      });
      expect((await resolve({ host: "API.OpenAI.com" })).header_value).toBe(`Bearer ${keys.openai}`);
    });

    it("sends the raw key in x-api-key for anthropic", async () => {
      expect(await resolve({ host: "api.anthropic.com", path: "/v1/messages" })).toEqual({
        provider: "anthropic",
        connection: "default",
        header_name: "x-api-key",
        header_value: keys.anthropic,
        expires_at: null,
      });
    });

    it("uses a named connection, or a named provider's default", async () => {
      expect(await resolve({ host: "api.openai.com", connection: "work" })).toMatchObject({
        connection: "work",
        header_value: `Bearer ${keys.openaiWork}`,
      });
      expect(await resolve({ provider: "openai" })).toMatchObject({
        connection: "default",
        header_value: `Bearer ${keys.openai}`,
      });
      expect(await resolve({ provider: "openai", host: "api.openai.com", connection: "work" })).toMatchObject(
        {
          header_value: `Bearer ${keys.openaiWork}`,
        },
      );
      const missing = await failure({ host: "api.openai.com", connection: "nope" });
      expect(missing).toBeInstanceOf(ConnectionNotFoundError);
      expect(missing.message).toMatch(/openai has "default", "work"/);
    });

    it("follows a changed default", async () => {
      await t.client.post("/api/connections/openai/work/default");
      try {
        expect((await resolve({ host: "api.openai.com" })).connection).toBe("work");
      } finally {
        await t.client.post("/api/connections/openai/default/default");
      }
      expect((await resolve({ host: "api.openai.com" })).connection).toBe("default");
    });

    it("never sends a named provider's credential to a host it does not own", async () => {
      const error = await failure({ provider: "openai", host: "api.anthropic.com" });
      expect(error).toBeInstanceOf(OperationNotAllowedError);
      expect(error.message).toMatch(/https:\/\/api\.anthropic\.com\/ is not an API URL of openai/);
      await expect(resolve({ provider: "openai", host: "evil.example.com" })).rejects.toBeInstanceOf(
        OperationNotAllowedError,
      );
      // A port other than 443 is another origin.
      await expect(resolve({ provider: "openai", host: "api.openai.com:8443" })).rejects.toBeInstanceOf(
        OperationNotAllowedError,
      );
    });

    it("never resolves for a provider's OAuth endpoint", async () => {
      const error = await failure({ host: "github.com", path: "/login/oauth/access_token" });
      expect(error).toBeInstanceOf(OperationNotAllowedError);
      expect(error.message).toMatch(/OAuth endpoint; svc never sends credentials there/);
      await expect(resolve({ host: "gitlab.com", path: "/oauth/token" })).rejects.toBeInstanceOf(
        OperationNotAllowedError,
      );
      await expect(
        resolve({ provider: "openai", host: "github.com", path: "/login/oauth/access_token/" }),
      ).rejects.toBeInstanceOf(OperationNotAllowedError);
    });

    it("answers an unknown host with ProviderNotFoundError", async () => {
      const error = await failure({ host: "unknown.example.org", path: "/x" });
      expect(error).toBeInstanceOf(ProviderNotFoundError);
      expect(error.message).toMatch(/no provider routes https:\/\/unknown\.example\.org\/x/);
      await expect(resolve({ host: "api.openai.com:8443" })).rejects.toBeInstanceOf(ProviderNotFoundError);
      await expect(resolve({ provider: "opnai" })).rejects.toBeInstanceOf(ProviderNotFoundError);
    });

    it("names the login to run for a provider without a connection", async () => {
      const error = await failure({ host: "api.mistral.ai", path: "/v1/models" });
      expect(error).toBeInstanceOf(ConnectionNotFoundError);
      expect(error.message).toMatch(/belongs to mistral, which has no connection; run `svc login mistral`/);
      const github = await failure({ host: "api.github.com" });
      expect(github).toBeInstanceOf(ConnectionNotFoundError);
      expect(github.message).toContain("`svc login github` or `svc login github-token`");
      const named = await failure({ provider: "mistral" });
      expect(named).toBeInstanceOf(ConnectionNotFoundError);
      expect(named.message).toContain("`svc login mistral`");
    });

    it("refuses malformed hosts and paths", async () => {
      await expect(resolve({ host: "api.openai.com", path: "v1" })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(resolve({ host: "api.openai.com/v1" })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(resolve({ host: "user@api.openai.com" })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(resolve({})).rejects.toBeInstanceOf(InvalidInputError);
    });

    it("refuses a host that two connected providers match equally, until one is named", async () => {
      await t.client.post("/api/providers", customProvider("gh-mirror", { api_url: "api.github.com" }));
      await loginWithApiKey(t.client, "github-token", keys.githubToken);
      await loginWithApiKey(t.client, "gh-mirror", keys.mirror);

      const error = await failure({ host: "api.github.com", path: "/user" });
      expect(error).toBeInstanceOf(OperationNotAllowedError);
      expect(error.message).toMatch(/matches gh-mirror and github-token equally; name the provider/);
      expect(await resolve({ host: "api.github.com", provider: "github-token" })).toMatchObject({
        header_value: `Bearer ${keys.githubToken}`,
      });
    });

    it("prefers a URL-prefix route over a bare host", async () => {
      await t.client.post(
        "/api/providers",
        customProvider("gh-repos", { api_url: "https://api.github.com/repos" }),
      );
      await loginWithApiKey(t.client, "gh-repos", keys.repos);
      expect(await resolve({ host: "api.github.com", path: "/repos/o/r/issues" })).toMatchObject({
        provider: "gh-repos",
        header_value: `Bearer ${keys.repos}`,
      });
      expect((await resolve({ host: "api.github.com", path: "/repos" })).provider).toBe("gh-repos");
      // Outside the prefix the bare-host providers still tie; a look-alike segment is outside it.
      await expect(resolve({ host: "api.github.com", path: "/user" })).rejects.toThrow(/equally/);
      await expect(resolve({ host: "api.github.com", path: "/repositories" })).rejects.toThrow(/equally/);

      // Without the bare-host rivals' connections, the prefix provider still only owns its prefix.
      await t.client.post("/api/connections/gh-mirror/revoke");
      expect((await resolve({ host: "api.github.com", path: "/user" })).provider).toBe("github-token");
      expect((await resolve({ host: "api.github.com", path: "/repos/x" })).provider).toBe("gh-repos");
    });

    it("sees a new custom provider's routes at once", async () => {
      const routes = (await t.client.get<{ routes: ProxyRoute[] }>("/api/proxy/routes")).routes;
      expect(routes.find((entry) => entry.provider === "gh-repos")).toMatchObject({
        api_url: ["https://api.github.com/repos"],
        connections: ["default"],
        default_connection: "default",
      });
    });
  });

  describe("each principal's vault", () => {
    let user: TestIdentity;
    beforeAll(async () => {
      user = await t.newUser();
    });

    it("does not show or resolve another principal's connections", async () => {
      expect(await user.client.get<Connection[]>("/api/connections")).toEqual([]);
      await expect(user.client.get("/api/connections/openai/default")).rejects.toBeInstanceOf(
        ConnectionNotFoundError,
      );
      const routes = (await user.client.get<{ routes: ProxyRoute[] }>("/api/proxy/routes")).routes;
      expect(routes.find((entry) => entry.provider === "openai")).toMatchObject({
        connections: [],
        default_connection: null,
      });
      await expect(resolve({ host: "api.openai.com" }, user.client)).rejects.toBeInstanceOf(
        ConnectionNotFoundError,
      );
      await expect(
        resolve({ provider: "openai", connection: "default" }, user.client),
      ).rejects.toBeInstanceOf(ConnectionNotFoundError);
      await expect(user.client.post("/api/connections/openai/default/logout")).rejects.toBeInstanceOf(
        ConnectionNotFoundError,
      );
    });

    it("keeps the user's own connection apart from the admin's", async () => {
      const own = `sk-user-${hex(16)}`;
      await loginWithApiKey(user.client, "openai", own);
      expect((await resolve({ host: "api.openai.com" }, user.client)).header_value).toBe(`Bearer ${own}`);
      expect((await resolve({ host: "api.openai.com" })).header_value).toBe(`Bearer ${keys.openai}`);
      expect((await user.client.get<Connection[]>("/api/connections")).map((c) => c.connection)).toEqual([
        "default",
      ]);
      // The user's revoke clears only the user's vault.
      await user.client.post("/api/connections/openai/revoke");
      expect((await resolve({ host: "api.openai.com" })).header_value).toBe(`Bearer ${keys.openai}`);
    });
  });
});

/** Every regular file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.isFile() ? [path] : [];
  });
}

describe("canary: a stored key never leaks", () => {
  let t: TestDaemon;
  const viaJson = `sk-canary-${hex(16)}`;
  const viaForm = `sk-canary-${hex(16)}`;
  /** Refused as an Anthropic key (wrong prefix): it must not be kept anywhere either. */
  const refused = `sk-canary-${hex(16)}`;
  const canaries = [viaJson, viaForm, refused];

  const expectNoCanary = (where: string, text: string | Buffer) => {
    for (const canary of canaries) {
      expect(text.includes(canary), `${where} contains a canary`).toBe(false);
    }
  };

  beforeAll(async () => {
    t = await startTestDaemon();
  });
  afterAll(async () => {
    await t.stop();
  });

  it("stores canaries through the JSON input and the browser form", async () => {
    await loginWithApiKey(t.client, "openai", viaJson, { connection: "json" });

    const session = await t.client.post<AuthSession>("/api/auth/sessions", {
      provider: "openai",
      connection: "browser",
    });
    const page = await (await fetch(session.next!.url)).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    const token = new URL(session.next!.url).searchParams.get("token")!;
    const posted = await fetch(`${t.daemon.url}/api/auth/sessions/${session.session_id}/input`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: t.daemon.url },
      body: new URLSearchParams({ token, csrf, api_key: viaForm }).toString(),
    });
    expect(posted.status).toBe(200);
    expectNoCanary("the success page", await posted.text());

    const wrong = await t.client.post<AuthSession>("/api/auth/sessions", { provider: "anthropic" });
    await expect(
      t.client.post(`/api/auth/sessions/${wrong.session_id}/input`, { api_key: refused }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    const wrongPage = await (await fetch(wrong.next!.url)).text();
    const wrongCsrf = /name="csrf" value="([^"]+)"/.exec(wrongPage)![1]!;
    const rerendered = await fetch(`${t.daemon.url}/api/auth/sessions/${wrong.session_id}/input`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: t.daemon.url },
      body: new URLSearchParams({
        token: new URL(wrong.next!.url).searchParams.get("token")!,
        csrf: wrongCsrf,
        api_key: refused,
      }).toString(),
    });
    expect(rerendered.status).toBe(400);
    expectNoCanary("the re-rendered form", await rerendered.text());

    // Both are stored and usable.
    const json = await t.client.post<ResolvedCredential>("/api/credentials/resolve", {
      provider: "openai",
      connection: "json",
    });
    expect(json.header_value).toBe(`Bearer ${viaJson}`);
    const browser = await t.client.get<Connection>("/api/connections/openai/browser?reveal=true");
    expect(browser.credential).toMatchObject({ api_key: viaForm });
  });

  it("is in no list, get, default or routes response without reveal", async () => {
    const responses = [
      await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections"),
      await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections?provider=openai"),
      await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections/openai/json"),
      await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections/openai/browser"),
      await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections/openai/browser?reveal=false"),
      await signedFetch(t.daemon.url, t.identity, "POST", "/api/connections/openai/browser/default"),
      await signedFetch(t.daemon.url, t.identity, "GET", "/api/proxy/routes"),
    ];
    for (const response of responses) {
      expect(response.status).toBe(200);
      expectNoCanary("a response", response.text);
    }
  });

  it("is in no audit event row", async () => {
    const rows = await t.daemon.context.store.db.selectFrom("audit_events").selectAll().execute();
    const events = rows.map((row) => row.event);
    expect(events).toContain("provider.login");
    expect(events).toContain("credential.revealed");
    expectNoCanary("audit_events", JSON.stringify(rows));
    expectNoCanary("the audit query", JSON.stringify(await t.daemon.context.audit.query({ limit: 500 })));
  });

  it("is in no file under the daemon's home, running or stopped", async () => {
    const scan = () => {
      const files = filesUnder(t.layout.home);
      for (const file of files) expectNoCanary(file, readFileSync(file));
      return files;
    };
    const running = scan();
    expect(running).toContain(t.layout.database);
    // The scan sees what is stored in the clear (entry names are not secret): it would see a key.
    const stored = Buffer.concat(
      running.filter((file) => file.startsWith(t.layout.database)).map((file) => readFileSync(file)),
    );
    expect(stored.includes("connections/openai/browser")).toBe(true);
    await t.close();
    const stopped = scan();
    expect(stopped).toContain(t.layout.auditLog);
    const log = readFileSync(t.layout.auditLog, "utf8");
    expect(log).toContain('"provider.login"');
    expect(log).toContain('"credential.revealed"');
    expectNoCanary("the audit log", log);
    expect(statSync(t.layout.database).size).toBeGreaterThan(0);
  });
});
