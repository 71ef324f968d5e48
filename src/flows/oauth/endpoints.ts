import { OperationNotAllowedError } from "../../core/errors.ts";
import { expandBaseUrl } from "../../providers/routing.ts";
import type { OAuthConfig } from "../../providers/schema.ts";
import type { AuthServerMetadata } from "./metadata.ts";

/** A provider's OAuth endpoints for one tenant, with `{base_url}` expanded. */
export interface OAuthEndpoints {
  issuer?: string;
  authorization?: string;
  token?: string;
  device_authorization?: string;
  registration?: string;
  revocation?: string;
}

/** What the definition itself says, with `{base_url}` replaced by the tenant (or the provider's default). */
export function configuredEndpoints(oauth: OAuthConfig, baseUrl?: string): OAuthEndpoints {
  const base = baseUrl ?? oauth.base_url;
  const expand = (value: string | undefined) =>
    value === undefined ? undefined : expandBaseUrl(value, base);
  const endpoints: OAuthEndpoints = {};
  const set = (key: keyof OAuthEndpoints, value: string | undefined) => {
    const resolved = expand(value);
    if (resolved) endpoints[key] = resolved;
  };
  set("issuer", oauth.issuer);
  set("authorization", oauth.authorization_url);
  set("token", oauth.token_url);
  set("device_authorization", oauth.device_authorization_url);
  set("registration", oauth.registration_endpoint);
  set("revocation", oauth.revocation_url);
  return endpoints;
}

/** The configured endpoints, gaps filled from discovered metadata (the definition wins where both say). */
export function withMetadata(configured: OAuthEndpoints, metadata: AuthServerMetadata): OAuthEndpoints {
  return {
    issuer: metadata.issuer,
    authorization: configured.authorization ?? metadata.authorization_endpoint,
    token: configured.token ?? metadata.token_endpoint,
    device_authorization: configured.device_authorization ?? metadata.device_authorization_endpoint,
    registration: configured.registration ?? metadata.registration_endpoint,
    revocation: configured.revocation ?? metadata.revocation_endpoint,
  };
}

/** The endpoint a step needs; a clear error when neither the definition nor the metadata has it. */
export function requireEndpoint(
  endpoints: OAuthEndpoints,
  key: Exclude<keyof OAuthEndpoints, "issuer">,
  provider: string,
): string {
  const url = endpoints[key];
  if (!url) {
    const hint = key === "authorization" || key === "token" ? "" : ` (the ${key.replace("_", " ")} endpoint)`;
    throw new OperationNotAllowedError(
      `${provider} has no ${key.replace("_", " ")} endpoint${hint}; a tenant needs --base-url, or the provider definition is incomplete`,
    );
  }
  return url;
}
