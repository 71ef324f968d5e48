import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type AuthServer, type AuthServerOptions, startAuthServer } from "./auth-server.ts";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function authServer(options?: AuthServerOptions): Promise<AuthServer> {
  const server = await startAuthServer(options);
  cleanups.push(() => server.close());
  return server;
}

/** A stand-in for the client's callback page: answers 200 "callback ok" to any GET. */
async function callbackListener(): Promise<{ redirectUri: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.end("callback ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { redirectUri: `http://127.0.0.1:${port}/auth/callback/oauth`, hits };
}

function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

function authorizationUrl(server: AuthServer, params: Record<string, string>): string {
  const url = new URL(server.endpoints.authorization);
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url.href;
}

/** A JSON response body; the few numeric members are only ever compared, never used as numbers. */
type Json = Record<string, string>;

async function post(url: string, form: Record<string, string>): Promise<{ status: number; body: Json }> {
  const response = await fetch(url, {
    method: "POST",
    body: new URLSearchParams(form),
    signal: AbortSignal.timeout(5000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

async function statusOf(url: string): Promise<number> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  await response.body?.cancel();
  return response.status;
}

/** POSTs RFC 7591 client metadata to the registration endpoint. */
async function register(server: AuthServer, metadata: object): Promise<{ status: number; body: Json }> {
  const response = await fetch(server.endpoints.registration, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(metadata),
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

/** Runs the browser through code + PKCE and returns the code and verifier. */
async function authorizeWithPkce(
  server: AuthServer,
  clientId: string,
  redirectUri: string,
  scope = "openid read",
) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString("hex");
  const result = await server.browser.authorize(
    authorizationUrl(server, {
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      scope,
      state,
      code_challenge: challenge,
      code_challenge_method: "S256",
    }),
  );
  const callback = new URL(result.url);
  return { result, callback, state, verifier, code: callback.searchParams.get("code") ?? "" };
}

function exchangeCode(
  server: AuthServer,
  clientId: string,
  redirectUri: string,
  code: string,
  verifier: string,
) {
  return post(server.endpoints.token, {
    grant_type: "authorization_code",
    client_id: clientId,
    redirect_uri: redirectUri,
    code,
    code_verifier: verifier,
  });
}

async function publicClientWithTokens(server: AuthServer) {
  const { redirectUri } = await callbackListener();
  const { client_id } = await server.addClient({
    token_endpoint_auth_method: "none",
    redirect_uris: [redirectUri],
  });
  const { code, verifier } = await authorizeWithPkce(server, client_id, redirectUri);
  const { body } = await exchangeCode(server, client_id, redirectUri, code, verifier);
  return { clientId: client_id, tokens: body };
}

async function startDeviceFlow(server: AuthServer) {
  const { client_id } = await server.addClient({ token_endpoint_auth_method: "none" });
  const { status, body } = await post(server.endpoints.device_authorization, { client_id, scope: "read" });
  expect(status).toBe(200);
  const poll = () =>
    post(server.endpoints.token, { grant_type: DEVICE_GRANT, client_id, device_code: body.device_code });
  return { clientId: client_id, authorization: body, poll };
}

describe("auth server fixture", () => {
  it("runs authorization code + PKCE for a static public client and refuses a wrong verifier", async () => {
    const server = await authServer();
    const { redirectUri, hits } = await callbackListener();
    const { client_id } = await server.addClient({
      token_endpoint_auth_method: "none",
      redirect_uris: [redirectUri],
    });

    const { result, callback, state, code, verifier } = await authorizeWithPkce(
      server,
      client_id,
      redirectUri,
    );
    expect(result.status).toBe(200);
    expect(result.body).toBe("callback ok");
    expect(hits).toHaveLength(1);
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);
    expect(callback.searchParams.get("state")).toBe(state);
    expect(callback.searchParams.get("iss")).toBe(server.issuer);
    expect(code).not.toBe("");

    const wrong = await exchangeCode(server, client_id, redirectUri, code, pkce().verifier);
    expect(wrong).toMatchObject({ status: 400, body: { error: "invalid_grant" } });

    // The failed exchange did not consume the code.
    const { status, body } = await exchangeCode(server, client_id, redirectUri, code, verifier);
    expect(status).toBe(200);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "openid read" });
    expect(body.access_token).toEqual(expect.any(String));
    expect(body.refresh_token).toEqual(expect.any(String));
    expect(body.id_token).toEqual(expect.any(String));
    expect(await server.isActive(body.access_token)).toBe(true);
    expect(server.tokenRequests).toEqual([
      { grant_type: "authorization_code", client_id, ok: false, error: "invalid_grant" },
      { grant_type: "authorization_code", client_id, ok: true },
    ]);
  });

  it("refuses an authorization request without PKCE", async () => {
    const server = await authServer();
    const { redirectUri, hits } = await callbackListener();
    const { client_id } = await server.addClient({
      token_endpoint_auth_method: "none",
      redirect_uris: [redirectUri],
    });
    const result = await server.browser.authorize(
      authorizationUrl(server, {
        response_type: "code",
        client_id,
        redirect_uri: redirectUri,
        scope: "read",
        state: "s",
      }),
    );
    const callback = new URL(result.url);
    expect(callback.searchParams.get("error")).toBe("invalid_request");
    expect(callback.searchParams.get("error_description")).toMatch(/PKCE/);
    expect(hits).toHaveLength(1);
  });

  it("sends error=access_denied to the redirect URI when the user denies consent", async () => {
    const server = await authServer();
    const { redirectUri } = await callbackListener();
    const { client_id } = await server.addClient({
      token_endpoint_auth_method: "none",
      redirect_uris: [redirectUri],
    });
    const result = await server.browser.authorize(
      authorizationUrl(server, {
        response_type: "code",
        client_id,
        redirect_uri: redirectUri,
        scope: "read",
        state: "xyz",
        code_challenge: pkce().challenge,
        code_challenge_method: "S256",
      }),
      { deny: true },
    );
    const callback = new URL(result.url);
    expect(result.body).toBe("callback ok");
    expect(callback.searchParams.get("error")).toBe("access_denied");
    expect(callback.searchParams.get("error_description")).toEqual(expect.any(String));
    expect(callback.searchParams.get("state")).toBe("xyz");
    expect(callback.searchParams.has("code")).toBe(false);
  });

  it("runs the device flow: pending, slow_down, approval, tokens", async () => {
    const server = await authServer();
    const { clientId, authorization, poll } = await startDeviceFlow(server);
    expect(authorization).toMatchObject({
      user_code: expect.any(String),
      verification_uri: `${server.issuer}/device`,
      verification_uri_complete: expect.stringContaining("user_code="),
      expires_in: 600,
      interval: 1,
    });
    expect(server.naturalSlowDown).toBe(false);

    expect((await poll()).body.error).toBe("authorization_pending");
    server.slowDownNext(1);
    expect(await poll()).toMatchObject({ status: 400, body: { error: "slow_down" } });
    expect((await poll()).body.error).toBe("authorization_pending");

    await server.browser.approveDevice(authorization.verification_uri, authorization.user_code, {
      account: "bob",
    });
    const { status, body } = await poll();
    expect(status).toBe(200);
    expect(body).toMatchObject({ token_type: "Bearer", scope: "read" });
    expect(body.refresh_token).toEqual(expect.any(String));
    expect(await server.isActive(body.access_token)).toBe(true);

    expect(server.tokenRequests.map(({ error }) => error ?? "ok")).toEqual([
      "authorization_pending",
      "slow_down",
      "authorization_pending",
      "ok",
    ]);
    expect(server.tokenRequests.every((request) => request.grant_type === DEVICE_GRANT)).toBe(true);
    expect(server.tokenRequests.every((request) => request.client_id === clientId)).toBe(true);
  });

  it("accepts verification_uri_complete and refuses an unknown user code", async () => {
    const server = await authServer();
    const { authorization, poll } = await startDeviceFlow(server);
    await expect(server.browser.approveDevice(authorization.verification_uri, "BCDF-GHJK")).rejects.toThrow(
      /refused user code BCDF-GHJK: the code was not found/,
    );
    await server.browser.approveDevice(authorization.verification_uri_complete, authorization.user_code);
    expect((await poll()).status).toBe(200);
  });

  it("answers access_denied to the poll after the user denies the device", async () => {
    const server = await authServer();
    const { authorization, poll } = await startDeviceFlow(server);
    await server.browser.approveDevice(authorization.verification_uri, authorization.user_code, {
      deny: true,
    });
    expect(await poll()).toMatchObject({ status: 400, body: { error: "access_denied" } });
  });

  it("answers expired_token once the device code has expired", async () => {
    const server = await authServer({ deviceCodeTtl: 2 });
    const { authorization, poll } = await startDeviceFlow(server);
    expect(authorization.expires_in).toBe(2);
    expect((await poll()).body.error).toBe("authorization_pending");
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await poll()).toMatchObject({ status: 400, body: { error: "expired_token" } });
    await expect(
      server.browser.approveDevice(authorization.verification_uri, authorization.user_code),
    ).rejects.toThrow(/the code has expired/);
  }, 10_000);

  it("registers a public loopback client dynamically and runs PKCE with it", async () => {
    const server = await authServer();
    const { redirectUri } = await callbackListener();
    const metadata = {
      application_type: "native",
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      client_name: "svc",
    };
    const { status: registrationStatus, body: registered } = await register(server, metadata);
    expect(registrationStatus).toBe(201);
    expect(registered).toMatchObject({ ...metadata, client_id: expect.any(String) });
    expect(registered.client_secret).toBeUndefined();
    expect(server.registrations).toEqual([
      {
        client_id: registered.client_id,
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
      },
    ]);

    const { callback, code, verifier } = await authorizeWithPkce(server, registered.client_id, redirectUri);
    expect(callback.searchParams.get("error")).toBeNull();
    const { status, body } = await exchangeCode(server, registered.client_id, redirectUri, code, verifier);
    expect(status).toBe(200);
    expect(body.refresh_token).toEqual(expect.any(String));
  });

  it("also registers a web client with a loopback redirect URI", async () => {
    const server = await authServer();
    const { redirectUri } = await callbackListener();
    const { status, body } = await register(server, {
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: "none",
    });
    expect(status).toBe(201);
    expect(body).toMatchObject({ application_type: "web", grant_types: ["authorization_code"] });
  });

  it("authenticates confidential static clients with client_secret_basic and client_secret_post", async () => {
    const server = await authServer();
    const basic = await server.addClient({ token_endpoint_auth_method: "client_secret_basic" });
    const postClient = await server.addClient({ token_endpoint_auth_method: "client_secret_post" });
    const deviceAuthorization = (headers: Record<string, string>, form: Record<string, string>) =>
      fetch(server.endpoints.device_authorization, {
        method: "POST",
        headers,
        body: new URLSearchParams({ scope: "read", ...form }),
        signal: AbortSignal.timeout(5000),
      }).then((response) => response.status);
    const authorization = (id: string, secret: string) =>
      `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

    expect(basic.client_secret).toEqual(expect.any(String));
    expect(
      await deviceAuthorization({ authorization: authorization(basic.client_id, basic.client_secret!) }, {}),
    ).toBe(200);
    expect(await deviceAuthorization({ authorization: authorization(basic.client_id, "wrong") }, {})).toBe(
      401,
    );
    const { client_id, client_secret = "" } = postClient;
    expect(await deviceAuthorization({}, { client_id, client_secret })).toBe(200);
    expect(await deviceAuthorization({}, { client_id, client_secret: "wrong" })).toBe(401);
  });

  it("rotates refresh tokens and refuses a used one", async () => {
    const server = await authServer();
    const { clientId, tokens } = await publicClientWithTokens(server);
    const refresh = (token: string) =>
      post(server.endpoints.token, {
        grant_type: "refresh_token",
        client_id: clientId,
        refresh_token: token,
      });

    const rotated = await refresh(tokens.refresh_token);
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).toEqual(expect.any(String));
    expect(rotated.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(rotated.body.access_token).not.toBe(tokens.access_token);
    expect(await server.isActive(tokens.refresh_token)).toBe(false);
    expect(await server.isActive(rotated.body.refresh_token)).toBe(true);

    expect(await refresh(tokens.refresh_token)).toMatchObject({
      status: 400,
      body: { error: "invalid_grant" },
    });
    // Reuse of a rotated token is treated as theft: the whole grant goes, the newest token with it.
    expect(await server.isActive(rotated.body.refresh_token)).toBe(false);

    expect(server.tokenRequests.slice(1)).toEqual([
      { grant_type: "refresh_token", client_id: clientId, ok: true },
      { grant_type: "refresh_token", client_id: clientId, ok: false, error: "invalid_grant" },
    ]);
  });

  it("revokes a refresh token (RFC 7009)", async () => {
    const server = await authServer();
    const { clientId, tokens } = await publicClientWithTokens(server);
    expect(await server.isActive(tokens.refresh_token)).toBe(true);

    const response = await post(server.endpoints.revocation, {
      client_id: clientId,
      token: tokens.refresh_token,
      token_type_hint: "refresh_token",
    });
    expect(response.status).toBe(200);
    expect(await server.isActive(tokens.refresh_token)).toBe(false);
    expect(await server.isActive(tokens.access_token)).toBe(false);
    expect(server.revocations).toEqual([
      { token_type_hint: "refresh_token", client_id: clientId, revoked: true },
    ]);
  });

  it("serves RFC 8414 (path-inserted) and OpenID metadata for a path issuer", async () => {
    const server = await authServer({ mountPath: "/tenant" });
    const { origin } = new URL(server.issuer);
    expect(server.issuer).toBe(`${origin}/tenant`);
    expect(server.endpoints.token).toBe(`${origin}/tenant/token`);

    for (const url of [
      `${origin}/.well-known/oauth-authorization-server/tenant`,
      `${server.issuer}/.well-known/openid-configuration`,
    ]) {
      const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        issuer: server.issuer,
        authorization_endpoint: server.endpoints.authorization,
        token_endpoint: server.endpoints.token,
        registration_endpoint: server.endpoints.registration,
        device_authorization_endpoint: server.endpoints.device_authorization,
        revocation_endpoint: server.endpoints.revocation,
        code_challenge_methods_supported: ["S256"],
      });
    }
    // The path-appended RFC 8414 form is not served, nor is anything outside the mount path.
    expect(await statusOf(`${server.issuer}/.well-known/oauth-authorization-server`)).toBe(404);
    expect(await statusOf(`${origin}/.well-known/openid-configuration`)).toBe(404);
  });

  it("runs the browser flows under a mount path", async () => {
    const server = await authServer({ mountPath: "/tenant" });
    const { tokens } = await publicClientWithTokens(server);
    expect(await server.isActive(tokens.access_token)).toBe(true);

    const { authorization, poll } = await startDeviceFlow(server);
    await server.browser.approveDevice(authorization.verification_uri_complete, authorization.user_code);
    expect((await poll()).status).toBe(200);
  });

  it("can hide either metadata document", async () => {
    const noOauth = await authServer({ mountPath: "/tenant", oauthMetadata: false });
    const { origin } = new URL(noOauth.issuer);
    expect(await statusOf(`${origin}/.well-known/oauth-authorization-server/tenant`)).toBe(404);
    expect(await statusOf(`${noOauth.issuer}/.well-known/openid-configuration`)).toBe(200);

    const noOpenid = await authServer({ openidMetadata: false });
    expect(await statusOf(`${noOpenid.issuer}/.well-known/oauth-authorization-server`)).toBe(200);
    expect(await statusOf(`${noOpenid.issuer}/.well-known/openid-configuration`)).toBe(404);
  });
});
