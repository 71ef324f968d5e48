/**
 * RFC 8414 authorization server metadata: where a provider that names only its `issuer` keeps its
 * endpoints. Tried in the order the MCP authorization spec uses: the RFC 8414 path-inserted URL,
 * OpenID Connect discovery path-inserted, then OpenID Connect discovery appended to the issuer.
 */
import { EndpointUnreachableError } from "../../core/errors.ts";
import { checkHttpsUrl } from "../../providers/schema.ts";
import { getJson } from "./http.ts";

export interface AuthServerMetadata {
  issuer: string;
  authorization_endpoint?: string;
  token_endpoint?: string;
  registration_endpoint?: string;
  device_authorization_endpoint?: string;
  revocation_endpoint?: string;
  code_challenge_methods_supported?: string[];
  /** The grants the server says it supports (RFC 8414 §2; absent means authorization_code and implicit). */
  grant_types_supported?: string[];
  /** Whether the server names itself in authorization responses (RFC 9207). */
  authorization_response_iss_parameter_supported?: boolean;
}

const ENDPOINT_FIELDS = [
  "authorization_endpoint",
  "token_endpoint",
  "registration_endpoint",
  "device_authorization_endpoint",
  "revocation_endpoint",
] as const;

function withoutTrailingSlash(value: string): string {
  return value.replace(/\/+$/, "");
}

/** The metadata URLs of an issuer, most specific first. */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = withoutTrailingSlash(url.pathname);
  const origin = url.origin;
  if (path === "") {
    return [`${origin}/.well-known/oauth-authorization-server`, `${origin}/.well-known/openid-configuration`];
  }
  return [
    `${origin}/.well-known/oauth-authorization-server${path}`,
    `${origin}/.well-known/openid-configuration${path}`,
    `${origin}${path}/.well-known/openid-configuration`,
  ];
}

/**
 * Checks a metadata document: its `issuer` must be the one asked for (RFC 8414 §3.3, which stops
 * one server from speaking for another), and every endpoint must be https (http on loopback only).
 */
export function parseMetadata(
  issuer: string,
  document: Record<string, unknown>,
  source: string,
): AuthServerMetadata {
  if (
    typeof document.issuer !== "string" ||
    withoutTrailingSlash(document.issuer) !== withoutTrailingSlash(issuer)
  ) {
    throw new EndpointUnreachableError(
      `${source} describes issuer ${JSON.stringify(document.issuer)}, not ${issuer}; check the provider's oauth.issuer`,
    );
  }
  const metadata: AuthServerMetadata = { issuer: document.issuer };
  for (const field of ENDPOINT_FIELDS) {
    const value = document[field];
    if (value === undefined) continue;
    const reason = typeof value === "string" ? checkHttpsUrl(value, false) : "must be a URL";
    if (reason) throw new EndpointUnreachableError(`${source}: ${field} ${reason}`);
    metadata[field] = value as string;
  }
  if (Array.isArray(document.code_challenge_methods_supported)) {
    metadata.code_challenge_methods_supported = document.code_challenge_methods_supported.filter(
      (method): method is string => typeof method === "string",
    );
  }
  if (Array.isArray(document.grant_types_supported)) {
    metadata.grant_types_supported = document.grant_types_supported.filter(
      (grant): grant is string => typeof grant === "string",
    );
  }
  if (document.authorization_response_iss_parameter_supported === true) {
    metadata.authorization_response_iss_parameter_supported = true;
  }
  return metadata;
}

/** Fetches the first metadata document the issuer serves. */
export async function discoverMetadata(issuer: string): Promise<AuthServerMetadata> {
  const urls = metadataUrls(issuer);
  for (const url of urls) {
    const document = await getJson(url);
    if (document) return parseMetadata(issuer, document, url);
  }
  throw new EndpointUnreachableError(
    `${issuer} publishes no authorization server metadata (tried ${urls.join(", ")})`,
  );
}
