/**
 * A real OAuth 2.0 authorization server for tests, built on oidc-provider (v9), plus a scripted
 * browser (fetch with a cookie jar, no JavaScript) that signs in and consents.
 *
 * What a client (svc's daemon) must know to talk to it:
 * - Dynamic client registration (RFC 7591, open): POST JSON to `endpoints.registration` with
 *   `redirect_uris: ["http://127.0.0.1:PORT/auth/callback/oauth"]`, `token_endpoint_auth_method: "none"`,
 *   `grant_types: ["authorization_code", "refresh_token"]` (add
 *   "urn:ietf:params:oauth:grant-type:device_code" for the device flow). `application_type` may be
 *   omitted (oidc-provider then uses "web", which accepts http loopback redirect URIs matched exactly)
 *   or be "native" (RFC 8252: http only on localhost/127.0.0.1/[::1], the port may differ at
 *   authorization time, and consent is asked on every authorization). Both are accepted.
 * - Authorization code requests need PKCE with `code_challenge_method=S256` sent explicitly (plain
 *   is refused) and at least one known scope: openid, profile, email, offline_access, read, write.
 *   Unknown scopes are dropped silently; a request left with no known scope ends in access_denied.
 *   `resource` (RFC 8707) is ignored. The response carries `code`, `state` and `iss` (RFC 9207).
 * - Access tokens are opaque. Token responses: access_token, token_type "Bearer", expires_in,
 *   scope, refresh_token (for every client allowed the refresh_token grant; offline_access and
 *   prompt=consent do not matter) and id_token when openid was granted.
 * - Refresh tokens rotate on every use. Presenting a used one fails with invalid_grant AND revokes
 *   the whole grant, so the newest refresh token and its access tokens die too.
 * - Revoking either token (RFC 7009) kills every token of its grant: revoking only the access token
 *   leaves the refresh token dead as well. Revoking an unknown token still answers 200.
 * - Device authorization responses carry no `interval` from oidc-provider; this fixture adds one
 *   (`deviceInterval`, default 1 s) so clients need not wait the RFC 8628 default of 5 s.
 * - Metadata: RFC 8414 only at the path-inserted URL (/.well-known/oauth-authorization-server/tenant
 *   for issuer http://127.0.0.1:PORT/tenant), OpenID discovery only at {issuer}/.well-known/openid-configuration.
 */
import { generateKeyPair, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { text } from "node:stream/consumers";
import { promisify } from "node:util";
import Provider, {
  type Adapter,
  type AdapterPayload,
  type ClientMetadata,
  type Configuration,
  errors,
  type JWK,
  type KoaContextWithOIDC,
} from "oidc-provider";

export interface AuthServerOptions {
  /** Access token lifetime in seconds (default 3600). */
  accessTokenTtl?: number;
  /** Device code lifetime in seconds (default 600). */
  deviceCodeTtl?: number;
  /** `interval` (seconds) added to device authorization responses (default 1). */
  deviceInterval?: number;
  /** Mount the provider under this path (e.g. "/tenant"), so the issuer has a path: http://127.0.0.1:PORT/tenant */
  mountPath?: string;
  /** Also serve RFC 8414 metadata at /.well-known/oauth-authorization-server (path-inserted form for a path issuer: /.well-known/oauth-authorization-server/tenant). Default true. */
  oauthMetadata?: boolean;
  /** Also serve /.well-known/openid-configuration (oidc-provider's own). Default true. */
  openidMetadata?: boolean;
  /** Offer the device flow (RFC 8628) and publish it in the metadata. Default true. */
  deviceFlow?: boolean;
  /** Offer dynamic client registration (RFC 7591) and publish it in the metadata. Default true. */
  registration?: boolean;
  /**
   * Rewrites successful token responses, to answer like a provider that departs from RFC 6749
   * (Slack nests a user token under `authed_user` and says `token_type: "user"`).
   */
  tokenResponse?: (body: Record<string, unknown>) => Record<string, unknown>;
}

export interface StaticClientMeta {
  token_endpoint_auth_method: "none" | "client_secret_post" | "client_secret_basic";
  redirect_uris?: string[];
  /** Default: authorization_code, refresh_token and device_code with redirect_uris, else device_code and refresh_token. */
  grant_types?: string[];
  /** An allow-list of scopes; any known scope when omitted. */
  scope?: string;
  application_type?: "web" | "native";
}

export interface TokenRequest {
  grant_type: string;
  client_id?: string;
  ok: boolean;
  error?: string;
}

export interface Revocation {
  token_type_hint?: string;
  client_id?: string;
  /** Whether a token of this client was found and revoked. */
  revoked: boolean;
}

export interface Registration {
  client_id: string;
  redirect_uris: string[];
  token_endpoint_auth_method: string;
  grant_types: string[];
}

export interface BrowserResult {
  status: number;
  url: string;
  body: string;
}

export interface AuthServer {
  issuer: string;
  endpoints: {
    authorization: string;
    token: string;
    device_authorization: string;
    registration: string;
    revocation: string;
    introspection: string;
  };
  /** Registers a static client directly (not via DCR). */
  addClient(meta: StaticClientMeta): Promise<{ client_id: string; client_secret?: string }>;
  /** Every token endpoint request, in order of completion. */
  tokenRequests: TokenRequest[];
  /** Every revocation request that reached the server. */
  revocations: Revocation[];
  /** Every successful dynamic client registration (RFC 7591). */
  registrations: Registration[];
  /** Whether the server's own introspection still calls the token (access or refresh) active. */
  isActive(token: string): Promise<boolean>;
  /** Makes the next `n` device-code token polls answer `slow_down` (RFC 8628 §3.5), whatever the timing. */
  slowDownNext(n: number): void;
  /** False: oidc-provider never answers slow_down on its own, however fast a client polls. */
  readonly naturalSlowDown: boolean;
  /** A scripted browser: one cookie jar per call (a fresh user agent). */
  browser: {
    /**
     * GETs the authorization URL, signs in as `account` (default "alice"), consents (or denies), and
     * follows redirects until leaving the auth server; returns the client's callback response
     * (or the auth server's own error page when it never redirects back).
     */
    authorize(url: string, options?: BrowserOptions): Promise<BrowserResult>;
    /**
     * Opens the verification URI (plain or complete), enters `userCode`, signs in and approves (or
     * denies). Throws when the server refuses the code or the flow ends anywhere unexpected.
     */
    approveDevice(verificationUri: string, userCode: string, options?: BrowserOptions): Promise<void>;
  };
  close(): Promise<void>;
}

export interface BrowserOptions {
  account?: string;
  deny?: boolean;
}

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const OAUTH_METADATA = "/.well-known/oauth-authorization-server";
const OPENID_METADATA = "/.well-known/openid-configuration";
const DAY = 24 * 60 * 60;

export async function startAuthServer(options: AuthServerOptions = {}): Promise<AuthServer> {
  const mountPath = normalizeMountPath(options.mountPath);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}${mountPath}`;

  const store = memoryStore();
  let slowDowns = 0;
  const introspector = { client_id: "fixture-introspector", client_secret: secret() };
  const provider = new Provider(issuer, {
    ...(await configuration(options, mountPath, introspector)),
    adapter: (model) => {
      const adapter = store.adapter(model);
      if (model !== "DeviceCode") return adapter;
      // The device_code grant looks its code up first, so this answers before any pending/expiry check.
      return {
        ...adapter,
        async find(id) {
          if (Provider.ctx?.oidc.route === "token" && slowDowns > 0) {
            slowDowns--;
            throw new errors.SlowDown();
          }
          return adapter.find(id);
        },
      };
    },
  });

  const tokenRequests: TokenRequest[] = [];
  const revocations: Revocation[] = [];
  const registrations: Registration[] = [];
  provider.use(interactionRoutes(provider, mountPath));
  provider.use(recorder({ tokenRequests, revocations, registrations }));
  provider.use(deviceInterval(options.deviceInterval ?? 1));
  if (options.tokenResponse) provider.use(rewriteTokenResponses(options.tokenResponse));
  const handle = provider.callback();
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const inner = providerPath(req.url ?? "/", mountPath, options);
    if (inner === undefined) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not_found"}');
      return;
    }
    // oidc-provider derives its endpoint URLs' mount path from originalUrl minus url.
    Object.assign(req, { originalUrl: `${mountPath}${inner}`, url: inner });
    handle(req, res);
  });

  // A disabled feature has no route: its endpoint is then "".
  const endpoint = (name: string) => {
    try {
      return provider.urlFor(name);
    } catch {
      return "";
    }
  };
  return {
    issuer,
    endpoints: {
      authorization: endpoint("authorization"),
      token: endpoint("token"),
      device_authorization: endpoint("device_authorization"),
      registration: endpoint("registration"),
      revocation: endpoint("revocation"),
      introspection: endpoint("introspection"),
    },
    addClient: (meta) => addClient(provider, store, meta),
    tokenRequests,
    revocations,
    registrations,
    isActive: (token) => introspect(endpoint("introspection"), introspector, token),
    slowDownNext(n) {
      slowDowns = n;
    },
    naturalSlowDown: false,
    browser: {
      authorize: (url, browserOptions) => authorize(issuer, url, browserOptions),
      approveDevice: (uri, userCode, browserOptions) => approveDevice(issuer, uri, userCode, browserOptions),
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

function normalizeMountPath(mountPath = ""): string {
  const trimmed = mountPath.replace(/\/+$/, "");
  if (trimmed !== "" && !trimmed.startsWith("/"))
    throw new Error(`mountPath must start with "/": ${mountPath}`);
  return trimmed;
}

/** Maps a request URL to the provider's own path, or undefined for a 404. */
function providerPath(url: string, mountPath: string, options: AuthServerOptions): string | undefined {
  const { pathname, search } = new URL(url, "http://localhost");
  // RFC 8414 §3.1 inserts the well-known segment before the issuer's path.
  if (pathname === `${OAUTH_METADATA}${mountPath}`) {
    return options.oauthMetadata === false ? undefined : `${OAUTH_METADATA}${search}`;
  }
  if (!pathname.startsWith(`${mountPath}/`)) return undefined;
  const inner = pathname.slice(mountPath.length);
  // Only the path-inserted form above is RFC 8414; keep the appended one out so clients can't lean on it.
  if (inner === OAUTH_METADATA) return undefined;
  if (inner === OPENID_METADATA && options.openidMetadata === false) return undefined;
  return `${inner}${search}`;
}

async function configuration(
  options: AuthServerOptions,
  mountPath: string,
  introspector: { client_id: string; client_secret: string },
): Promise<Configuration> {
  // Every default helper the provider would call is replaced: the defaults print notices.
  return {
    jwks: { keys: [await signingKey()] },
    clients: [{ ...introspector, grant_types: [], response_types: [], redirect_uris: [] }],
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, name: sub, email: `${sub}@example.test`, email_verified: true }),
    }),
    claims: { openid: ["sub"], profile: ["name"], email: ["email", "email_verified"] },
    scopes: ["openid", "offline_access", "read", "write"],
    clientBasedCORS: () => true,
    pkce: { required: () => true },
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    expiresWithSession: () => false,
    rotateRefreshToken: true,
    ttl: {
      AccessToken: options.accessTokenTtl ?? 3600,
      AuthorizationCode: 60,
      DeviceCode: options.deviceCodeTtl ?? 600,
      Grant: 14 * DAY,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 14 * DAY,
      Session: 14 * DAY,
    },
    interactions: { url: (_ctx, interaction) => `${mountPath}/interaction/${interaction.uid}` },
    renderError: (ctx, out) => {
      ctx.type = "html";
      ctx.body = page("Error", errorMarker(out.error, describeError(out.error, out.error_description)));
    },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: { enabled: false },
      registration: { enabled: options.registration ?? true },
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      introspection: {
        enabled: true,
        allowedPolicy: (_ctx, client, token) =>
          client.clientId === introspector.client_id || token.clientId === client.clientId,
      },
      deviceFlow: {
        enabled: options.deviceFlow ?? true,
        userCodeInputSource: (ctx, form, out, err) => {
          const error = err ? errorMarker(err.name, describeError(err.message, out?.error_description)) : "";
          ctx.body = page(
            "Enter code",
            `${error}${form}<button type="submit" form="op.deviceInputForm">Continue</button>`,
          );
        },
        userCodeConfirmSource: (ctx, form, client, _deviceInfo, userCode) => {
          const question = `<p>Sign in ${escapeHtml(client.clientId)} with code <code>${escapeHtml(userCode)}</code>?</p>`;
          ctx.body = page(
            "Confirm device",
            `${question}${form}<button type="submit" form="op.deviceConfirmForm">Continue</button>`,
          );
        },
        successSource: (ctx) => {
          ctx.body = page("Device approved", '<p id="device-success">You may close this page.</p>');
        },
      },
    },
  };
}

let keyPromise: Promise<JWK> | undefined;

/** One RSA signing key per test process (RS256 is oidc-provider's default ID token algorithm). */
function signingKey(): Promise<JWK> {
  keyPromise ??= promisify(generateKeyPair)("rsa", { modulusLength: 2048 }).then(
    ({ privateKey }) => privateKey.export({ format: "jwk" }) as JWK,
  );
  return keyPromise;
}

function secret(): string {
  return randomBytes(32).toString("base64url");
}

// --- storage --------------------------------------------------------------------------------------

/**
 * oidc-provider's models keyed by "Model:id". Nothing is evicted: the models check their own expiry,
 * and an expired device code must still be found to answer expired_token.
 */
function memoryStore() {
  const rows = new Map<string, AdapterPayload>();
  const adapter = (model: string): Adapter => {
    const key = (id: string) => `${model}:${id}`;
    const findBy = async (predicate: (payload: AdapterPayload) => boolean) => {
      for (const [k, payload] of rows) if (k.startsWith(`${model}:`) && predicate(payload)) return payload;
      return undefined;
    };
    return {
      async upsert(id, payload) {
        rows.set(key(id), payload);
      },
      async find(id) {
        return rows.get(key(id));
      },
      findByUid: (uid) => findBy((payload) => payload.uid === uid),
      findByUserCode: (userCode) => findBy((payload) => payload.userCode === userCode),
      async consume(id) {
        const payload = rows.get(key(id));
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id) {
        rows.delete(key(id));
      },
      async revokeByGrantId(grantId) {
        for (const [k, payload] of rows)
          if (k.startsWith(`${model}:`) && payload.grantId === grantId) rows.delete(k);
      },
    };
  };
  return { adapter };
}

type Store = ReturnType<typeof memoryStore>;

async function addClient(provider: Provider, store: Store, meta: StaticClientMeta) {
  const redirectUris = meta.redirect_uris ?? [];
  const grantTypes =
    meta.grant_types ??
    (redirectUris.length
      ? ["authorization_code", "refresh_token", DEVICE_GRANT]
      : [DEVICE_GRANT, "refresh_token"]);
  const client_id = `client-${randomUUID()}`;
  const client_secret = meta.token_endpoint_auth_method === "none" ? undefined : secret();
  const metadata: ClientMetadata = {
    client_id,
    ...(client_secret ? { client_secret } : {}),
    token_endpoint_auth_method: meta.token_endpoint_auth_method,
    redirect_uris: redirectUris,
    grant_types: grantTypes,
    // A client without the code grant has no authorization endpoint use, so no response types.
    response_types: grantTypes.includes("authorization_code") ? ["code"] : [],
    ...(meta.scope ? { scope: meta.scope } : {}),
    ...(meta.application_type ? { application_type: meta.application_type } : {}),
  };
  await provider.Client.validate(metadata);
  await store.adapter("Client").upsert(client_id, metadata as AdapterPayload);
  return client_secret ? { client_id, client_secret } : { client_id };
}

async function introspect(url: string, client: { client_id: string; client_secret: string }, token: string) {
  const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64");
  const response = await fetch(url, {
    method: "POST",
    headers: { authorization: `Basic ${basic}` },
    body: new URLSearchParams({ token }),
    signal: AbortSignal.timeout(5000),
  });
  if (!response.ok) throw new Error(`introspection answered ${response.status}: ${await response.text()}`);
  const body = (await response.json()) as { active: boolean };
  return body.active;
}

// --- provider middleware ----------------------------------------------------------------------------

type Middleware = (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => Promise<unknown>;

/** Our own login and consent pages (plain HTML forms) at {mountPath}/interaction/:uid. */
function interactionRoutes(provider: Provider, mountPath: string): Middleware {
  return async (ctx, next) => {
    const match = /^\/interaction\/([\w-]+)(?:\/(login|confirm|abort))?$/.exec(ctx.path);
    if (!match) return next();
    const [, uid, action] = match;
    const base = `${mountPath}/interaction/${uid}`;
    if (!action && ctx.method === "GET") {
      const details = await provider.interactionDetails(ctx.req, ctx.res);
      ctx.body = details.prompt.name === "login" ? loginPage(base) : consentPage(base, details);
      return;
    }
    if (!action || ctx.method !== "POST") ctx.throw(405);
    const form = new URLSearchParams(await text(ctx.req));
    const result = await interactionOutcome(provider, ctx, action, form);
    ctx.status = 303;
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result));
  };
}

/** A login, consent or denial as `provider.interactionResult` expects it. */
async function interactionOutcome(
  provider: Provider,
  ctx: KoaContextWithOIDC,
  action: string,
  form: URLSearchParams,
) {
  if (action === "abort") return { error: "access_denied", error_description: "End-User denied the request" };
  if (action === "login") {
    const accountId = form.get("login");
    if (!accountId) ctx.throw(400, "login is required");
    return { login: { accountId } };
  }
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { accountId } = details.session ?? {};
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: String(details.params.client_id) });
  if (!grant) ctx.throw(400, "grant not found");
  const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  return { consent: { grantId: await grant.save() } };
}

/** Records token, revocation and registration requests once the provider has answered them. */
function recorder(log: {
  tokenRequests: TokenRequest[];
  revocations: Revocation[];
  registrations: Registration[];
}): Middleware {
  return async (ctx, next) => {
    await next();
    // ctx.oidc only exists on the provider's own routes.
    const oidc = ctx.oidc as KoaContextWithOIDC["oidc"] | undefined;
    const params = (oidc?.params ?? {}) as Record<string, string | undefined>;
    const body = ctx.body as Record<string, unknown> | undefined;
    const clientId = oidc?.client?.clientId ?? params.client_id;
    switch (oidc?.route) {
      case "token":
        log.tokenRequests.push({
          grant_type: params.grant_type ?? "",
          ...(clientId ? { client_id: clientId } : {}),
          ok: ctx.status === 200,
          ...(ctx.status === 200 ? {} : { error: String(body?.error ?? `http_${ctx.status}`) }),
        });
        break;
      case "revocation": {
        const token = oidc.entities.AccessToken ?? oidc.entities.RefreshToken;
        log.revocations.push({
          ...(params.token_type_hint ? { token_type_hint: params.token_type_hint } : {}),
          ...(clientId ? { client_id: clientId } : {}),
          revoked: ctx.status === 200 && token !== undefined && token.clientId === clientId,
        });
        break;
      }
      case "registration":
        if (ctx.status === 201) {
          const { client_id, redirect_uris, token_endpoint_auth_method, grant_types } =
            body as unknown as Registration;
          log.registrations.push({ client_id, redirect_uris, token_endpoint_auth_method, grant_types });
        }
        break;
    }
  };
}

/** oidc-provider sends no `interval`, which leaves clients on RFC 8628's 5 s default: too slow for tests. */
function deviceInterval(seconds: number): Middleware {
  return async (ctx, next) => {
    await next();
    const oidc = ctx.oidc as KoaContextWithOIDC["oidc"] | undefined;
    if (oidc?.route === "device_authorization" && ctx.status === 200) {
      ctx.body = { ...(ctx.body as object), interval: seconds };
    }
  };
}

/** Applies `tokenResponse` to every successful token endpoint answer. */
function rewriteTokenResponses(
  rewrite: (body: Record<string, unknown>) => Record<string, unknown>,
): Middleware {
  return async (ctx, next) => {
    await next();
    const oidc = ctx.oidc as KoaContextWithOIDC["oidc"] | undefined;
    if (oidc?.route === "token" && ctx.status === 200) {
      ctx.body = rewrite({ ...(ctx.body as Record<string, unknown>) });
    }
  };
}

// --- pages ------------------------------------------------------------------------------------------

function page(title: string, content: string): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${content}</body></html>`;
}

function errorMarker(name: string, message: string): string {
  return `<p id="error" data-error="${escapeHtml(name)}">${escapeHtml(message)}</p>`;
}

function describeError(message: string, description?: string): string {
  return description && description !== message ? `${message}: ${description}` : message;
}

function loginPage(base: string): string {
  return page(
    "Sign in",
    `<form id="login" method="post" action="${base}/login"><input name="login" value=""><button type="submit">Sign in</button></form>`,
  );
}

function consentPage(base: string, details: { params: Record<string, unknown> }): string {
  const client = escapeHtml(String(details.params.client_id));
  const scope = escapeHtml(String(details.params.scope ?? ""));
  return page(
    "Authorize",
    `<p>${client} asks for: ${scope}</p>` +
      `<form id="consent" method="post" action="${base}/confirm"><button type="submit">Allow</button></form>` +
      `<form id="deny" method="post" action="${base}/abort"><button type="submit">Deny</button></form>`,
  );
}

// The same five escapes as oidc-provider's own pages.
const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};
const HTML_UNESCAPES = Object.fromEntries(
  Object.entries(HTML_ESCAPES).map(([char, entity]) => [entity, char]),
);

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]!);
}

function unescapeHtml(value: string): string {
  return value.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => HTML_UNESCAPES[entity]!);
}

// --- scripted browser -------------------------------------------------------------------------------

/** Enough of RFC 6265 for one origin: name, value and path; expired or emptied cookies are dropped. */
class CookieJar {
  readonly #cookies = new Map<string, { name: string; value: string; path: string }>();

  store(setCookies: string[]): void {
    for (const line of setCookies) {
      const [[name, value] = ["", ""], ...attributes] = line.split(";").map(splitPair);
      const attr = new Map(attributes.map(([key, val]) => [key.toLowerCase(), val]));
      const path = attr.get("path") || "/";
      const expires = attr.get("expires");
      const gone =
        value === "" ||
        Number(attr.get("max-age") ?? 1) <= 0 ||
        (expires !== undefined && Date.parse(expires) <= Date.now());
      if (gone) this.#cookies.delete(`${path};${name}`);
      else this.#cookies.set(`${path};${name}`, { name, value, path });
    }
  }

  header(pathname: string): string {
    return [...this.#cookies.values()]
      .filter(({ path }) => pathname === path || pathname.startsWith(path.endsWith("/") ? path : `${path}/`))
      .map(({ name, value }) => `${name}=${value}`)
      .join("; ");
  }
}

/** "a=b=c" → ["a", "b=c"], both trimmed. */
function splitPair(part: string): [string, string] {
  const eq = part.indexOf("=");
  return eq < 0 ? [part.trim(), ""] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
}

interface Form {
  id?: string;
  action: string;
  fields: Record<string, string>;
}

interface Navigation {
  url: string;
  form?: Record<string, string>;
}

const MAX_STEPS = 20;

/** Requests `start`, following redirects, until a page on the auth server or any response from elsewhere. */
async function navigate(origin: string, jar: CookieJar, start: Navigation): Promise<BrowserResult> {
  let next: Navigation = start;
  for (let hop = 0; hop < MAX_STEPS; hop++) {
    const url = new URL(next.url);
    const local = url.origin === origin;
    const response = await fetch(url, {
      method: next.form ? "POST" : "GET",
      redirect: "manual",
      headers: { accept: "text/html", ...(local ? { cookie: jar.header(url.pathname) } : {}) },
      ...(next.form ? { body: new URLSearchParams(next.form) } : {}),
      signal: AbortSignal.timeout(5000),
    });
    if (local) jar.store(response.headers.getSetCookie());
    const location = response.headers.get("location");
    if (!local || location === null || response.status < 300 || response.status >= 400) {
      return { status: response.status, url: url.href, body: await response.text() };
    }
    await response.body?.cancel();
    next = { url: new URL(location, url).href };
  }
  throw new Error(`too many redirects from ${start.url}`);
}

function parseForms(html: string, base: string): Form[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].map(([, attributes = "", inner = ""]) => {
    const attrs = parseAttributes(attributes);
    const fields: Record<string, string> = {};
    for (const [, input = ""] of inner.matchAll(/<input\b([^>]*)>/g)) {
      const { name, value = "" } = parseAttributes(input);
      if (name) fields[name] = value;
    }
    return {
      ...(attrs.id ? { id: attrs.id } : {}),
      action: new URL(attrs.action ?? base, base).href,
      fields,
    };
  });
}

function parseAttributes(source: string): Record<string, string> {
  return Object.fromEntries(
    [...source.matchAll(/([\w.:-]+)\s*=\s*"([^"]*)"/g)].map(([, k, v]) => [k, unescapeHtml(v!)]),
  );
}

function pageError(body: string): { name: string; message: string } | undefined {
  const match = /<p id="error" data-error="([^"]*)">([^<]*)<\/p>/.exec(body);
  return match ? { name: unescapeHtml(match[1]!), message: unescapeHtml(match[2]!) } : undefined;
}

/** What a person would submit on this page, or undefined when there is nothing left to do. */
function nextSubmission(
  forms: Form[],
  options: BrowserOptions & { userCode?: string },
): Navigation | undefined {
  const byId = (id: string) => forms.find((form) => form.id === id);
  const submit = (form: Form | undefined, extra: Record<string, string> = {}) =>
    form && { url: form.action, form: { ...form.fields, ...extra } };
  if (byId("login")) return submit(byId("login"), { login: options.account ?? "alice" });
  if (byId("consent")) return submit(byId(options.deny ? "deny" : "consent"));
  if (byId("op.deviceInputForm"))
    return submit(byId("op.deviceInputForm"), { user_code: options.userCode ?? "" });
  if (byId("op.deviceConfirmForm")) return submit(byId("op.deviceConfirmForm"));
  // oidc-provider's auto-submitting (form_post) page: a single anonymous form.
  if (forms.length === 1 && !forms[0]!.id) return submit(forms[0]);
  return undefined;
}

/** Walks the auth server's pages until leaving it, reaching a page with no form to submit, or an error. */
async function browse(
  origin: string,
  start: string,
  options: BrowserOptions & { userCode?: string },
): Promise<BrowserResult> {
  const jar = new CookieJar();
  let current = await navigate(origin, jar, { url: start });
  for (let step = 0; step < MAX_STEPS; step++) {
    if (new URL(current.url).origin !== origin || pageError(current.body)) return current;
    const next = nextSubmission(parseForms(current.body, current.url), options);
    if (!next) return current;
    current = await navigate(origin, jar, next);
  }
  throw new Error(`browser did not finish within ${MAX_STEPS} pages, last at ${current.url}`);
}

function authorize(issuer: string, url: string, options: BrowserOptions = {}): Promise<BrowserResult> {
  return browse(new URL(issuer).origin, url, options);
}

async function approveDevice(
  issuer: string,
  verificationUri: string,
  userCode: string,
  options: BrowserOptions = {},
) {
  const result = await browse(new URL(issuer).origin, verificationUri, { ...options, userCode });
  const error = pageError(result.body);
  // A denial at consent comes back as oidc-provider's "interaction was aborted" page.
  if (options.deny && error?.name === "AbortedError") return;
  if (error)
    throw new Error(`device verification refused user code ${userCode}: ${error.message} (${error.name})`);
  if (options.deny || !result.body.includes('id="device-success"')) {
    throw new Error(
      `device verification ended unexpectedly at ${result.url} (${result.status}): ${result.body.slice(0, 300)}`,
    );
  }
}
