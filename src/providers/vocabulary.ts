/**
 * The provider vocabulary without zod: the CLI reads these at start-up, and loading the schemas
 * (zod) would cost every command tens of milliseconds. `schema.ts` builds its enums from them.
 */
export const AUTH_TYPES = ["oauth2", "api_key", "aws_sigv4"] as const;
export const FLOWS = ["pkce", "device_code", "dcr_pkce", "api_key"] as const;
export const OAUTH_FLOWS = ["pkce", "device_code", "dcr_pkce"] as const;
export const SOURCES = ["bundled", "custom"] as const;
export const TOKEN_AUTH_METHODS = ["client_secret_post", "client_secret_basic", "none"] as const;

export type Flow = (typeof FLOWS)[number];

/** A provider name: lower case, safe as a file name and in a URL path segment. */
export const PROVIDER_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
