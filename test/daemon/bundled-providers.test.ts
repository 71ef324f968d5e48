/**
 * Bundled definitions driven through the real daemon against the oidc-provider fixture set up the
 * way each provider answers: each test registers a copy of a bundled definition whose endpoints are
 * the fixture's (everything else as bundled: scopes, token format, client authentication), logs in,
 * and checks what svc would inject.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection, Revoked } from "../../src/api/connections.ts";
import type { ProxyRoute, ResolvedCredential } from "../../src/api/credentials.ts";
import { loadBundledProviders } from "../../src/providers/catalogue.ts";
import { RouteTable } from "../../src/providers/routing.ts";
import type { Provider, ProviderDefinitionInput } from "../../src/providers/schema.ts";
import { childEnvironment } from "../../src/proxy/child-env.ts";
import { PLACEHOLDER } from "../../src/proxy/scrub.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { staticClient } from "../support/oauth.ts";

const bundled = new Map(loadBundledProviders().map((provider) => [provider.name, provider]));
let t: TestDaemon;
let counter = 0;

beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

/**
 * A copy of a bundled OAuth definition pointed at the fixture: endpoints replaced, the `{base_url}`
 * and issuer dropped, `api_url` a host of its own; every other OAuth setting as bundled.
 */
function likeBundled(
  name: string,
  server: AuthServer,
  oauth: Record<string, unknown> = {},
): ProviderDefinitionInput & { name: string } {
  const original = bundled.get(name)!;
  const {
    authorization_url: _a,
    token_url: _t,
    revocation_url: _r,
    device_authorization_url: _d,
    registration_endpoint: _g,
    issuer: _i,
    base_url: _b,
    ...settings
  } = original.oauth!;
  const copy = `${name}-like-${++counter}`;
  return {
    name: copy,
    display_name: `${original.display_name} (fixture)`,
    description: original.description,
    auth_type: "oauth2",
    flow: original.flow,
    api_url: `api.${copy}.example.com`,
    oauth: {
      ...settings,
      authorization_url: server.endpoints.authorization,
      token_url: server.endpoints.token,
      ...(original.oauth!.revocation_url ? { revocation_url: server.endpoints.revocation } : {}),
      ...(original.oauth!.device_authorization_url
        ? { device_authorization_url: server.endpoints.device_authorization }
        : {}),
      ...oauth,
    },
    env: [],
    docs_url: original.docs_url,
  };
}

const start = (provider: string, extra: Record<string, unknown> = {}) =>
  t.client.post<AuthSession>("/api/auth/sessions", { provider, ...extra });
const read = (session: AuthSession) => t.client.get<AuthSession>(`/api/auth/sessions/${session.session_id}`);
const resolve = (provider: string) =>
  t.client.post<ResolvedCredential>("/api/credentials/resolve", { provider });
const revealed = (provider: string) =>
  t.client.get<Connection>(`/api/connections/${provider}/default?reveal=true`);

/** Registers the definition, enters a static client registered with `method`, returns the session at sign-in. */
async function signInSession(
  server: AuthServer,
  definition: ProviderDefinitionInput & { name: string },
  method: "client_secret_basic" | "client_secret_post" | "none",
): Promise<AuthSession> {
  await t.client.post("/api/providers", definition);
  const client = await staticClient(server, t.daemon.url, method);
  const session = await start(definition.name);
  expect(session).toMatchObject({ status: "pending", waiting_for: "client_credentials" });
  return t.client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/input`, client);
}

describe("Slack: a user token nested under authed_user, token types user and bot", () => {
  let server: AuthServer;
  let tokenType = "user";
  beforeAll(async () => {
    // Slack's oauth.v2.access for a user-scope install: the token sits in authed_user, typed "user".
    server = await startAuthServer({
      tokenResponse: ({ access_token, token_type: _type, scope, refresh_token, expires_in, ...rest }) =>
        tokenType === "bot"
          ? { ok: true, ...rest, access_token, token_type: "bot", scope }
          : {
              ok: true,
              app_id: "A0TEST",
              team: { id: "T0TEST" },
              authed_user: {
                id: "U0TEST",
                scope,
                access_token,
                token_type: tokenType,
                refresh_token,
                expires_in,
              },
            },
    });
  });
  afterAll(() => server.close());

  /** Slack reads user scopes from user_scope; the fixture reads scope: copy it over as Slack would. */
  async function approve(session: AuthSession, status = 200): Promise<void> {
    const url = new URL(session.next!.url);
    expect(url.searchParams.get("scope")).toBeNull();
    url.searchParams.set("scope", url.searchParams.get("user_scope")!.replaceAll(",", " "));
    expect((await server.browser.authorize(url.href)).status).toBe(status);
  }

  it("asks for user scopes with PKCE and injects the authed_user token as Bearer", async () => {
    tokenType = "user";
    const definition = likeBundled("slack", server, { scopes: ["openid", "read"] });
    const session = await signInSession(server, definition, "client_secret_basic");
    const authorize = new URL(session.next!.url);
    expect(authorize.searchParams.get("user_scope")).toBe("openid,read");
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    await approve(session);
    expect(await read(session)).toMatchObject({ status: "completed" });
    const credential = (await revealed(definition.name)).credential as { access_token: string };
    expect(await server.isActive(credential.access_token)).toBe(true);
    expect((await resolve(definition.name)).header_value).toBe(`Bearer ${credential.access_token}`);
  });

  it('sends a bot token as Bearer, never as "bot"', async () => {
    tokenType = "bot";
    const definition = likeBundled("slack", server, { scopes: ["openid", "read"] });
    await approve(await signInSession(server, definition, "client_secret_basic"));
    const { header_value } = await resolve(definition.name);
    expect(header_value).toMatch(/^Bearer \S+$/);
  });

  it("fails the login on a token type Slack does not document, and stores nothing", async () => {
    tokenType = "mac";
    const definition = likeBundled("slack", server, { scopes: ["openid", "read"] });
    const session = await signInSession(server, definition, "client_secret_basic");
    await approve(session, 400);
    const failed = await read(session);
    expect(failed).toMatchObject({ status: "failed" });
    expect(failed.error!.message).toMatch(/token_type "mac".*does not document/);
    await expect(revealed(definition.name)).rejects.toThrow(/no connection/);
  });
});

describe("Calendly: client_secret_basic at the token endpoint, and revocation", () => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer();
  });
  afterAll(() => server.close());

  it("exchanges the code with HTTP Basic and revokes the grant when the connection is removed", async () => {
    const definition = likeBundled("calendly", server, { scopes: ["openid", "read"] });
    expect(bundled.get("calendly")!.oauth!.token_auth_method).toBe("client_secret_basic");
    // The fixture refuses a basic client that posts its secret in the body.
    const session = await signInSession(server, definition, "client_secret_basic");
    expect((await server.browser.authorize(session.next!.url)).status).toBe(200);
    expect(await read(session)).toMatchObject({ status: "completed" });
    const credential = (await revealed(definition.name)).credential as { access_token: string };
    const removed = await t.client.post<Revoked>(`/api/connections/${definition.name}/revoke`);
    expect(removed).toMatchObject({ remote: [{ connection: "default", result: "revoked" }] });
    expect(await server.isActive(credential.access_token)).toBe(false);
  });
});

describe("ClickUp: the raw token in Authorization", () => {
  let server: AuthServer;
  beforeAll(async () => {
    // ClickUp's token endpoint answers only {access_token}.
    server = await startAuthServer({ tokenResponse: ({ access_token }) => ({ access_token }) });
  });
  afterAll(() => server.close());

  it("injects the token without a Bearer prefix", async () => {
    const definition = likeBundled("clickup", server, { scopes: ["openid", "read"], pkce: true });
    const session = await signInSession(server, definition, "client_secret_post");
    expect((await server.browser.authorize(session.next!.url)).status).toBe(200);
    const credential = (await revealed(definition.name)).credential as { access_token: string };
    expect((await resolve(definition.name)).header_value).toBe(credential.access_token);
  });
});

describe("Google: authorization code with PKCE, scopes by preset", () => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer();
  });
  afterAll(() => server.close());

  it("logs in with the browser flow by default", async () => {
    expect(bundled.get("google")!.flow).toBe("pkce");
    const session = await start("google", { connection: "preset-check" });
    expect(session).toMatchObject({ flow: "pkce", waiting_for: "client_credentials" });
    await t.client.post(`/api/auth/sessions/${session.session_id}/cancel`);
  });

  it("expands --scopes gmail into Gmail's scope", async () => {
    const definition = likeBundled("google", server);
    const session = await signInSession(server, definition, "client_secret_post");
    expect(session.status).toBe("waiting_for_user");
    const gmail = await start(definition.name, { connection: "mail", scopes: ["gmail", "openid"] });
    expect(new URL(gmail.next!.url).searchParams.get("scope")).toBe(
      "https://www.googleapis.com/auth/gmail.modify openid",
    );
  });
});

describe("GitHub: no PKCE alternative without a client secret", () => {
  it("refuses --flow pkce and names the device flow", async () => {
    await expect(start("github", { flow: "pkce" })).rejects.toThrow(
      /cannot log in with the pkce flow; it supports device_code/,
    );
  });
});

describe("Okta and Auth0: api_url only where the default scopes reach", () => {
  let server: AuthServer;
  beforeAll(async () => {
    server = await startAuthServer();
  });
  afterAll(() => server.close());

  it("asks Okta for the self-service API scope and claims only /api/v1/users/me", async () => {
    const okta = bundled.get("okta")!;
    expect(okta.oauth!.scopes).toContain("okta.users.read.self");
    const table = new RouteTable([{ provider: okta, baseUrls: ["https://acme.okta.com"] }]);
    expect(table.candidates(new URL("https://acme.okta.com/api/v1/users/me"))).toHaveLength(1);
    expect(table.candidates(new URL("https://acme.okta.com/api/v1/users"))).toHaveLength(0);
  });

  it("claims Auth0's /userinfo, which openid and profile can call, not the Management API", async () => {
    const auth0 = bundled.get("auth0")!;
    const table = new RouteTable([{ provider: auth0, baseUrls: ["https://acme.eu.auth0.com"] }]);
    expect(table.candidates(new URL("https://acme.eu.auth0.com/userinfo"))).toHaveLength(1);
    expect(table.candidates(new URL("https://acme.eu.auth0.com/api/v2/users"))).toHaveLength(0);
  });
});

describe("flows from an issuer's metadata", () => {
  let bare: AuthServer;
  let full: AuthServer;
  beforeAll(async () => {
    [bare, full] = await Promise.all([
      startAuthServer({ deviceFlow: false, registration: false }),
      startAuthServer(),
    ]);
  });
  afterAll(() => Promise.all([bare.close(), full.close()]));

  const issuerOnly = (name: string, server: AuthServer): ProviderDefinitionInput => ({
    name,
    display_name: name,
    description: "An issuer-only provider.",
    auth_type: "oauth2",
    flow: "dcr_pkce",
    api_url: `api.${name}.example.com`,
    oauth: { issuer: server.issuer, scopes: ["openid", "read"] },
    docs_url: "https://docs.example.com/",
  });

  it("offers no device flow and no pkce alternative the metadata does not publish", async () => {
    const name = `issuer-bare-${++counter}`;
    await t.client.post("/api/providers", issuerOnly(name, bare));
    await expect(start(name, { flow: "device_code" })).rejects.toThrow(
      /cannot log in with the device_code flow; it supports dcr_pkce$/,
    );
  });

  it("offers the device flow when the metadata publishes its endpoint and grant", async () => {
    const name = `issuer-full-${++counter}`;
    await t.client.post("/api/providers", issuerOnly(name, full));
    const session = await start(name, { flow: "device_code" });
    expect(session).toMatchObject({ flow: "device_code", waiting_for: "client_credentials" });
  });

  it("lists the discovered token and registration endpoints as never-inject after a DCR login", async () => {
    const name = `issuer-mcp-${++counter}`;
    await t.client.post("/api/providers", issuerOnly(name, full));
    const session = await start(name);
    expect((await full.browser.authorize(session.next!.url)).status).toBe(200);
    const routes = (await t.client.get<{ routes: ProxyRoute[] }>("/api/proxy/routes")).routes;
    const route = routes.find((entry) => entry.provider === name)!;
    expect(route.oauth_endpoints).toEqual(
      expect.arrayContaining([full.endpoints.token, full.endpoints.registration]),
    );
  });
});

describe("placeholders for api_key.env_var", () => {
  it("puts the SDK variable of a connected provider in the child's environment, even when env forgot it", async () => {
    const name = `envless-${++counter}`;
    await t.client.post("/api/providers", {
      name,
      display_name: "Env-less",
      description: "An API-key provider whose env list forgot its SDK variable.",
      auth_type: "api_key",
      flow: "api_key",
      api_url: `api.${name}.example.com`,
      api_key: { env_var: "ENVLESS_API_KEY" },
      docs_url: "https://docs.example.com/",
    });
    await loginWithApiKey(t.client, name, "envless-secret-key-123");
    const routes = (await t.client.get<{ routes: ProxyRoute[] }>("/api/proxy/routes")).routes;
    const placeholders = routes.filter((r) => r.connections.length > 0).flatMap((r) => r.env);
    const { env } = childEnvironment({
      base: { ENVLESS_API_KEY: "real-key-from-the-shell" },
      proxyUrl: "http://127.0.0.1:1",
      caBundlePath: "/dev/null",
      placeholders,
    });
    expect(env.ENVLESS_API_KEY).toBe(PLACEHOLDER);
  });

  it.each(
    [...[...bundled.values()].filter((provider: Provider) => provider.auth_type === "api_key")].map(
      (provider) => [provider.name, provider],
    ),
  )("%s names its SDK variable in env", (_name, provider) => {
    const p = provider as Provider;
    expect(p.api_key!.env_var).toBeTruthy();
    expect(p.env).toContain(p.api_key!.env_var);
  });
});

describe("guided OAuth app creation", () => {
  it("gives the first Slack login numbered steps: registration page, callback URL and scopes, ready to copy", async () => {
    const session = await start("slack", { connection: "guided" });
    expect(session).toMatchObject({ waiting_for: "client_credentials" });
    const steps = session.client_setup!.steps;
    expect(steps[0]).toMatchObject({ copy: "https://api.slack.com/apps" });
    expect(steps).toContainEqual({
      text: "Set the app's callback (redirect) URL to:",
      copy: session.redirect_uri,
    });
    expect(steps).toContainEqual({
      text: "Give the app these user token scopes:",
      copy: "channels:read chat:write",
    });

    const html = await (await fetch(session.next!.url)).text();
    expect(html).toMatch(/<ol class="setup">/);
    expect(html).toContain(`readonly value="${session.redirect_uri}"`);
    expect(html).toContain('readonly value="https://api.slack.com/apps"');
    await t.client.post(`/api/auth/sessions/${session.session_id}/cancel`);
  });
});
