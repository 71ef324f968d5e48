/** The authorization request (RFC 6749 §4.1.1 with RFC 7636 S256) the browser is sent to. */
export interface AuthorizationRequest {
  endpoint: string;
  clientId: string;
  redirectUri: string;
  state: string;
  scope?: string;
  /** The parameter the scopes go in (default `scope`; Slack's user scopes: `user_scope`). */
  scopeParam?: string;
  /** The S256 challenge; absent only for providers that turned PKCE off. */
  challenge?: string;
  /** The provider's extra parameters (e.g. `access_type=offline`); they never override the ones above. */
  extra?: Record<string, string>;
}

export function authorizationUrl(request: AuthorizationRequest): string {
  const url = new URL(request.endpoint);
  for (const [key, value] of Object.entries(request.extra ?? {})) url.searchParams.set(key, value);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", request.clientId);
  url.searchParams.set("redirect_uri", request.redirectUri);
  url.searchParams.set("state", request.state);
  if (request.scope) url.searchParams.set(request.scopeParam ?? "scope", request.scope);
  if (request.challenge) {
    url.searchParams.set("code_challenge", request.challenge);
    url.searchParams.set("code_challenge_method", "S256");
  }
  return url.toString();
}
