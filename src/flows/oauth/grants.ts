/**
 * The token-endpoint grants (RFC 6749 §4.1.3 and §6, RFC 8628 §3.4), the device authorization
 * request (RFC 8628 §3.1), dynamic client registration (RFC 7591) and revocation (RFC 7009).
 */
import { type OAuthClient, OAuthProtocolError, postForm, postJson } from "./http.ts";

/** What a token endpoint hands out. */
export interface TokenSet {
  access_token: string;
  token_type: string;
  refresh_token?: string;
  /** Seconds the access token lives, when the server says. */
  expires_in?: number;
  /** The granted scopes, when the server says (it may grant fewer than asked). */
  scopes?: string[];
}

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  /** Seconds between polls (RFC 8628 default 5). */
  interval: number;
}

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  token_endpoint_auth_method: OAuthClient["auth_method"];
}

export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

function text(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function seconds(body: Record<string, unknown>, key: string): number | undefined {
  const value = typeof body[key] === "string" ? Number(body[key]) : body[key];
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

function malformed(what: string): OAuthProtocolError {
  return new OAuthProtocolError("invalid_response", `the ${what} answer lacks required fields`, 200);
}

/** Scopes come space-separated (RFC 6749), though some servers use commas. */
export function splitScopes(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(/[\s,]+/).filter(Boolean);
}

/**
 * The object of a token response that holds the token: the body itself, or the member `tokenPath`
 * names (Slack answers a user token under `authed_user`) when the body has no token of its own there.
 */
function tokenHolder(body: Record<string, unknown>, tokenPath: string | undefined): Record<string, unknown> {
  if (!tokenPath) return body;
  let value: unknown = body;
  for (const key of tokenPath.split(".")) {
    value = value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value !== null && typeof value === "object" && text(value as Record<string, unknown>, "access_token")
    ? (value as Record<string, unknown>)
    : body;
}

/** How a provider's token endpoint answers: where the token sits in the body. */
export interface TokenFormat {
  tokenPath?: string;
}

export async function requestToken(
  tokenUrl: string,
  client: OAuthClient,
  params: Record<string, string | undefined>,
  format: TokenFormat = {},
): Promise<TokenSet> {
  const { body: whole } = await postForm(tokenUrl, params, client);
  const body = tokenHolder(whole, format.tokenPath);
  const accessToken = text(body, "access_token");
  if (!accessToken) throw malformed("token");
  const expiresIn = seconds(body, "expires_in");
  const refreshToken = text(body, "refresh_token");
  const scopes = splitScopes(text(body, "scope"));
  return {
    access_token: accessToken,
    token_type: text(body, "token_type") ?? "Bearer",
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
    ...(expiresIn ? { expires_in: expiresIn } : {}),
    ...(scopes ? { scopes } : {}),
  };
}

export function exchangeCode(
  tokenUrl: string,
  client: OAuthClient,
  exchange: { code: string; redirectUri: string; verifier?: string },
  format: TokenFormat = {},
): Promise<TokenSet> {
  return requestToken(
    tokenUrl,
    client,
    {
      grant_type: "authorization_code",
      code: exchange.code,
      redirect_uri: exchange.redirectUri,
      code_verifier: exchange.verifier,
    },
    format,
  );
}

export function refreshTokens(
  tokenUrl: string,
  client: OAuthClient,
  refreshToken: string,
  format: TokenFormat = {},
): Promise<TokenSet> {
  return requestToken(tokenUrl, client, { grant_type: "refresh_token", refresh_token: refreshToken }, format);
}

export function pollDeviceToken(
  tokenUrl: string,
  client: OAuthClient,
  deviceCode: string,
  format: TokenFormat = {},
): Promise<TokenSet> {
  return requestToken(tokenUrl, client, { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode }, format);
}

export async function requestDeviceAuthorization(
  url: string,
  client: OAuthClient,
  scope: string | undefined,
): Promise<DeviceAuthorization> {
  const { body } = await postForm(url, { scope }, client);
  const deviceCode = text(body, "device_code");
  const userCode = text(body, "user_code");
  // Some servers predate the RFC's name and say verification_url.
  const verificationUri = text(body, "verification_uri") ?? text(body, "verification_url");
  if (!deviceCode || !userCode || !verificationUri) throw malformed("device authorization");
  const complete = text(body, "verification_uri_complete");
  return {
    device_code: deviceCode,
    user_code: userCode,
    verification_uri: verificationUri,
    ...(complete ? { verification_uri_complete: complete } : {}),
    expires_in: seconds(body, "expires_in") ?? 600,
    interval: seconds(body, "interval") ?? 5,
  };
}

/**
 * Registers a public client (RFC 7591). A loopback redirect makes it a native app (RFC 8252); a
 * hosted daemon's https callback, a web app.
 */
export async function registerClient(
  url: string,
  request: { redirectUri: string; clientName: string; scope?: string },
): Promise<RegisteredClient> {
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(new URL(request.redirectUri).hostname);
  const body = await postJson(url, {
    client_name: request.clientName,
    redirect_uris: [request.redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: loopback ? "native" : "web",
    ...(request.scope ? { scope: request.scope } : {}),
  });
  const clientId = text(body, "client_id");
  if (!clientId) throw malformed("registration");
  const method = text(body, "token_endpoint_auth_method");
  const secret = text(body, "client_secret");
  return {
    client_id: clientId,
    ...(secret ? { client_secret: secret } : {}),
    // A server may insist on a secret after all; use what it registered.
    token_endpoint_auth_method:
      method === "client_secret_basic" || method === "client_secret_post"
        ? method
        : secret
          ? "client_secret_basic"
          : "none",
  };
}

export async function revokeToken(
  url: string,
  client: OAuthClient,
  token: string,
  hint: "access_token" | "refresh_token",
): Promise<void> {
  await postForm(url, { token, token_type_hint: hint }, client);
}
