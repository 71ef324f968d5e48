/**
 * The provider definition schema: what a bundled JSON file under `src/providers/bundled/`, a custom
 * provider file under `~/.svc/providers/`, or a registration request holds. `docs/providers.md`
 * documents every field; keep the two in step.
 *
 * The schemas are plain zod 4 objects (no transforms) so they convert to JSON Schema for
 * `/openapi.json`. Defaults are zod defaults, except `oauth.token_auth_method`, whose default
 * depends on `flow` and is filled in by an `overwrite` step that keeps the type unchanged.
 */
import { type core, z } from "zod";
import { InvalidInputError } from "../core/errors.ts";
import {
  AUTH_TYPES,
  FLOWS,
  type OAUTH_FLOWS,
  PROVIDER_NAME_PATTERN,
  SOURCES,
  TOKEN_AUTH_METHODS,
} from "./vocabulary.ts";

// ---------------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------------

export {
  AUTH_TYPES,
  FLOWS,
  OAUTH_FLOWS,
  PROVIDER_NAME_PATTERN,
  SOURCES,
  TOKEN_AUTH_METHODS,
} from "./vocabulary.ts";

export const AuthTypeSchema = z.enum(AUTH_TYPES);
export const FlowSchema = z.enum(FLOWS);
export const SourceSchema = z.enum(SOURCES);
export const TokenAuthMethodSchema = z.enum(TOKEN_AUTH_METHODS);

export type AuthType = z.infer<typeof AuthTypeSchema>;
export type Flow = z.infer<typeof FlowSchema>;
export type OAuthFlow = (typeof OAUTH_FLOWS)[number];
export type ProviderSource = z.infer<typeof SourceSchema>;
export type TokenAuthMethod = z.infer<typeof TokenAuthMethodSchema>;

/** An environment variable name. */
export const ENV_VAR_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An HTTP header field name (RFC 9110 `token`). */
export const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** The placeholder of multi-tenant providers; only allowed at the very start of a URL. */
export const BASE_URL_PLACEHOLDER = "{base_url}";
/** The prefix of a regular-expression `api_url` entry. */
export const API_URL_REGEX_PREFIX = "regex:";
/** A scope preset name. */
export const SCOPE_PRESET_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;
/** A `checked` date. */
const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;
/** What an OAuth token type is sent as when the definition names none. */
export const DEFAULT_TOKEN_TYPES: Readonly<Record<string, string | null>> = { bearer: "Bearer" };
/** The hosts on which plain `http:` is accepted. */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** What `{base_url}` is replaced with when a templated URL is validated. */
const DUMMY_BASE_URL = "https://tenant.example.com";
const HOST_PATTERN =
  /^(?=.{1,253}(?::\d{1,5})?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/;

// ---------------------------------------------------------------------------------------------
// Field-level checks (each returns a reason, or undefined when the value is fine)
// ---------------------------------------------------------------------------------------------

function isLoopback(url: URL): boolean {
  return LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * Checks an absolute https URL (http on loopback). `{base_url}` is accepted as a prefix when
 * `allowTemplate` is set and validated by substituting a dummy tenant host.
 */
export function checkHttpsUrl(value: string, allowTemplate = true): string | undefined {
  let candidate = value;
  if (value.includes(BASE_URL_PLACEHOLDER)) {
    if (!allowTemplate) return `must not contain ${BASE_URL_PLACEHOLDER}`;
    if (!value.startsWith(BASE_URL_PLACEHOLDER) || value.lastIndexOf(BASE_URL_PLACEHOLDER) !== 0) {
      return `${BASE_URL_PLACEHOLDER} may only appear once, at the start of the URL`;
    }
    const rest = value.slice(BASE_URL_PLACEHOLDER.length);
    if (rest !== "" && !rest.startsWith("/"))
      return `${BASE_URL_PLACEHOLDER} must be followed by "/" or nothing`;
    candidate = DUMMY_BASE_URL + rest;
  }
  if (/\s/.test(candidate)) return "must not contain whitespace";
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http(s) URL";
  if (url.username || url.password) return "must not contain credentials";
  if (url.hash) return "must not contain a fragment";
  if (url.protocol === "http:" && !isLoopback(url)) return "must use https (loopback hosts excepted)";
  return undefined;
}

/** Checks a regular expression source; returns the compile error as the reason. */
export function checkRegExp(pattern: string): string | undefined {
  if (pattern === "") return "must not be an empty pattern";
  try {
    new RegExp(pattern);
    return undefined;
  } catch (error) {
    return `is not a valid regular expression (${error instanceof Error ? error.message : String(error)})`;
  }
}

/** Checks one `api_url` entry: a bare host, an https URL used as a prefix, or `regex:<pattern>`. */
export function checkApiUrlEntry(entry: string): string | undefined {
  if (entry.startsWith(API_URL_REGEX_PREFIX)) {
    const reason = checkRegExp(entry.slice(API_URL_REGEX_PREFIX.length));
    return reason && `regex ${reason}`;
  }
  if (entry.includes("://") || entry.startsWith(BASE_URL_PLACEHOLDER)) {
    const reason = checkHttpsUrl(entry);
    if (reason) return reason;
    const url = new URL(entry.replace(BASE_URL_PLACEHOLDER, DUMMY_BASE_URL));
    if (url.search) return "must not contain a query string (use regex: to match queries)";
    return undefined;
  }
  if (!HOST_PATTERN.test(entry)) {
    return 'must be a lower-case host ("api.example.com"), an https URL prefix ("https://host/path") or "regex:<pattern>"';
  }
  return undefined;
}

function refineWith(check: (value: string) => string | undefined) {
  return (value: string, ctx: core.$RefinementCtx<string>) => {
    const reason = check(value);
    if (reason) ctx.addIssue({ code: "custom", message: reason, input: value });
  };
}

// ---------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------

const NonEmpty = z.string().trim().min(1, "must not be empty");
const OAuthUrl = z.string().superRefine(refineWith((v) => checkHttpsUrl(v)));
const EnvVarName = z
  .string()
  .regex(ENV_VAR_PATTERN, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");

export const ApiUrlEntrySchema = z.string().superRefine(refineWith(checkApiUrlEntry)).meta({
  description: 'A bare host ("api.github.com"), an https URL whose path is a prefix, or "regex:<pattern>".',
});

export const ApiUrlSchema = z
  .union([ApiUrlEntrySchema, z.array(ApiUrlEntrySchema).min(1, "must list at least one entry")])
  .meta({ description: "Where the proxy injects this provider's credential: one entry or a list." });

export const OAuthConfigSchema = z
  .strictObject({
    authorization_url: OAuthUrl.optional().meta({
      description: "Authorization endpoint (browser redirect).",
    }),
    token_url: OAuthUrl.optional().meta({ description: "Token endpoint." }),
    revocation_url: OAuthUrl.optional().meta({ description: "RFC 7009 revocation endpoint." }),
    device_authorization_url: OAuthUrl.optional().meta({
      description: "RFC 8628 device authorization endpoint (device_code flow).",
    }),
    registration_endpoint: OAuthUrl.optional().meta({
      description: "RFC 7591 dynamic client registration endpoint (dcr_pkce flow).",
    }),
    issuer: OAuthUrl.optional().meta({
      description: "RFC 8414 issuer: metadata is discovered at /.well-known/oauth-authorization-server.",
    }),
    scopes: z.array(NonEmpty).default([]).meta({ description: "Scopes requested by default." }),
    scope_separator: z.string().min(1).default(" ").meta({ description: "How scopes are joined." }),
    pkce: z.boolean().default(true).meta({ description: "Send an S256 PKCE challenge." }),
    client_id: NonEmpty.optional().meta({
      description: "Public client id, when the provider publishes one.",
    }),
    authorization_params: z
      .record(z.string(), z.string())
      .optional()
      .meta({ description: "Extra query parameters for the authorization request." }),
    token_auth_method: TokenAuthMethodSchema.optional().meta({
      description:
        "How the client authenticates at the token endpoint. Default: client_secret_post for pkce, none for device_code and dcr_pkce.",
    }),
    base_url: OAuthUrl.optional().meta({
      description: "Default value of {base_url} for multi-tenant providers (a connection may override it).",
    }),
    scope_param: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+$/, "must be a query parameter name")
      .optional()
      .meta({
        description:
          'The authorization parameter that carries the scopes (default "scope"; Slack: "user_scope").',
      }),
    scope_presets: z
      .record(
        z.string().regex(SCOPE_PRESET_PATTERN, "must be a preset name (a-z, 0-9, -)"),
        z.array(NonEmpty).min(1),
      )
      .optional()
      .meta({ description: "Named scope sets a login may ask for by name (`--scopes gmail`)." }),
    token_types: z
      .record(
        z.string().regex(/^[a-z0-9_.-]+$/, "must be a lower-case token type"),
        z
          .string()
          .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, "must be an HTTP auth scheme")
          .nullable(),
      )
      .optional()
      .meta({
        description:
          'How each token_type the token endpoint answers is sent: the Authorization scheme, or null for the raw token. Default {"bearer": "Bearer"}; any other type is refused.',
      }),
    token_path: z
      .string()
      .regex(/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/, "must be a dotted path of member names")
      .optional()
      .meta({ description: 'Where the token response nests the token (Slack user tokens: "authed_user").' }),
    app_setup: z
      .strictObject({
        url: z.string().superRefine(refineWith((v) => checkHttpsUrl(v, false))),
        app_type: NonEmpty,
        steps: z.array(NonEmpty).default([]),
      })
      .optional()
      .meta({
        description:
          "Where and how to create the OAuth app a login needs: the registration page, the app type to pick, and any further settings.",
      }),
  })
  .meta({ description: "OAuth 2.0 endpoints and client settings (auth_type oauth2)." });

export const ApiKeyConfigSchema = z
  .strictObject({
    header_name: z
      .string()
      .regex(HEADER_NAME_PATTERN, "must be an HTTP header name")
      .default("Authorization")
      .meta({ description: "Header that carries the key." }),
    header_prefix: z
      .string()
      .trim()
      .min(1, "must not be empty (use null for the raw key)")
      .nullable()
      .default("Bearer")
      .meta({ description: "Prefix before the key, joined with one space; null sends the raw key." }),
    env_var: EnvVarName.optional().meta({
      description: "Variable the provider's official SDK reads the key from.",
    }),
    key_pattern: z
      .string()
      .superRefine(refineWith(checkRegExp))
      .optional()
      .meta({ description: "Regular expression a well-formed key matches." }),
    key_pattern_hint: NonEmpty.optional().meta({ description: "Human description of the key format." }),
  })
  .meta({ description: "How an API key is sent (auth_type api_key)." });

const definitionShape = {
  name: z
    .string()
    .regex(
      PROVIDER_NAME_PATTERN,
      "must be 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit",
    )
    .meta({ description: "Unique, filesystem-safe identifier.", examples: ["github"] }),
  display_name: NonEmpty.meta({ description: "Human-readable name.", examples: ["GitHub"] }),
  description: NonEmpty.meta({ description: "One sentence on what the provider gives access to." }),
  auth_type: AuthTypeSchema,
  flow: FlowSchema,
  api_url: ApiUrlSchema,
  oauth: OAuthConfigSchema.optional(),
  api_key: ApiKeyConfigSchema.optional(),
  env: z
    .array(EnvVarName)
    .default([])
    .meta({ description: "Variables the proxy sets to svc-proxy-managed for this provider." }),
  docs_url: z
    .string()
    .superRefine(refineWith((v) => checkHttpsUrl(v, false)))
    .meta({ description: "The provider documentation these settings come from." }),
  sources: z
    .record(
      z.string().regex(/^[a-z_]+(\.[a-z_]+)*$/, "must be a field path such as oauth.token_url"),
      z.string().superRefine(refineWith((v) => checkHttpsUrl(v, false))),
    )
    .optional()
    .meta({
      description: "Where each non-obvious field was read: field path to the provider's documentation URL.",
    }),
  checked: z
    .string()
    .regex(DATE_PATTERN, "must be a date (YYYY-MM-DD)")
    .optional()
    .meta({ description: "When the fields were last checked against the sources." }),
  shares_with: z.array(z.string().regex(PROVIDER_NAME_PATTERN, "must be a provider name")).optional().meta({
    description:
      "Providers for the same service (an OAuth and a token variant) that may claim the same hosts and variables; a request names the provider when both are connected.",
  }),
};

// ---------------------------------------------------------------------------------------------
// Cross-field rules
// ---------------------------------------------------------------------------------------------

type DefinitionShapeOutput = z.output<z.ZodObject<typeof definitionShape>>;

/** The OAuth fields that hold URLs (all must be https except on loopback). */
export const OAUTH_URL_FIELDS = [
  "authorization_url",
  "token_url",
  "revocation_url",
  "device_authorization_url",
  "registration_endpoint",
  "issuer",
] as const;

/** The token endpoint client authentication used when `oauth.token_auth_method` is omitted. */
export function defaultTokenAuthMethod(flow: Flow): TokenAuthMethod {
  return flow === "pkce" ? "client_secret_post" : "none";
}

/**
 * The flows a provider's definition offers: its own, and any other OAuth flow whose endpoints the
 * definition names. An `issuer` alone offers nothing more: what it supports is known only from the
 * metadata it publishes (`offeredFlows` in flows/oauth/offered-flows.ts). A `dcr_pkce` provider's
 * clients come from registration only, so it offers no `pkce` with a client of the person's own.
 */
export function availableFlows(provider: Pick<ProviderDefinition, "flow" | "oauth">): Flow[] {
  const oauth = provider.oauth;
  if (!oauth) return [provider.flow];
  const flows = new Set<Flow>([provider.flow]);
  if (provider.flow !== "dcr_pkce" && oauth.authorization_url && oauth.token_url) flows.add("pkce");
  if (oauth.device_authorization_url && oauth.token_url) flows.add("device_code");
  if (oauth.registration_endpoint && !oauth.client_id) flows.add("dcr_pkce");
  return FLOWS.filter((flow) => flows.has(flow));
}

/**
 * The Authorization header value for an OAuth token, or undefined when the token endpoint answered
 * a token type the definition does not document (it is then never sent).
 */
export function oauthAuthorization(
  oauth: Pick<OAuthConfig, "token_types"> | undefined,
  tokenType: string,
  accessToken: string,
): string | undefined {
  const types = oauth?.token_types ?? DEFAULT_TOKEN_TYPES;
  const key = tokenType.toLowerCase();
  if (!Object.hasOwn(types, key)) return undefined;
  const scheme = types[key];
  return scheme === null || scheme === undefined ? accessToken : `${scheme} ${accessToken}`;
}

/** The token types a definition documents, for messages. */
export function documentedTokenTypes(oauth: Pick<OAuthConfig, "token_types"> | undefined): string[] {
  return Object.keys(oauth?.token_types ?? DEFAULT_TOKEN_TYPES);
}

/** Scopes with preset names (`gmail`) replaced by the preset's scopes, duplicates dropped. */
export function expandScopePresets(
  oauth: Pick<OAuthConfig, "scope_presets"> | undefined,
  scopes: string[],
): string[] {
  const presets = oauth?.scope_presets ?? {};
  const out = scopes.flatMap((scope) => (Object.hasOwn(presets, scope) ? presets[scope]! : [scope]));
  return [...new Set(out)];
}

function apiUrlEntries(apiUrl: string | string[]): string[] {
  return typeof apiUrl === "string" ? [apiUrl] : apiUrl;
}

function checkDefinition(
  value: DefinitionShapeOutput,
  ctx: core.$RefinementCtx<DefinitionShapeOutput>,
): void {
  const issue = (path: PropertyKey[], message: string) =>
    ctx.addIssue({ code: "custom", path, message, input: value });
  const { auth_type, flow, oauth, api_key } = value;

  if (auth_type === "api_key") {
    if (flow !== "api_key") issue(["flow"], 'must be "api_key" when auth_type is "api_key"');
    if (!api_key) issue(["api_key"], 'is required when auth_type is "api_key"');
    if (oauth) issue(["oauth"], 'is only allowed when auth_type is "oauth2"');
  } else if (auth_type === "aws_sigv4") {
    // The access key pair is pasted like an API key; the daemon signs each request with it.
    if (flow !== "api_key") issue(["flow"], 'must be "api_key" when auth_type is "aws_sigv4"');
    if (api_key) issue(["api_key"], 'is only allowed when auth_type is "api_key"');
    if (oauth) issue(["oauth"], 'is only allowed when auth_type is "oauth2"');
  } else {
    if (flow === "api_key")
      issue(["flow"], 'must be one of pkce, device_code, dcr_pkce when auth_type is "oauth2"');
    if (api_key) issue(["api_key"], 'is only allowed when auth_type is "api_key"');
    if (!oauth) {
      issue(["oauth"], 'is required when auth_type is "oauth2"');
    } else if (flow === "pkce") {
      if (!oauth.authorization_url) issue(["oauth", "authorization_url"], "is required for the pkce flow");
      if (!oauth.token_url) issue(["oauth", "token_url"], "is required for the pkce flow");
    } else if (flow === "device_code") {
      if (!oauth.device_authorization_url) {
        issue(["oauth", "device_authorization_url"], "is required for the device_code flow");
      }
      if (!oauth.token_url) issue(["oauth", "token_url"], "is required for the device_code flow");
    } else if (flow === "dcr_pkce") {
      if (!oauth.registration_endpoint && !oauth.issuer) {
        issue(
          ["oauth", "registration_endpoint"],
          "or oauth.issuer (for RFC 8414 discovery) is required for the dcr_pkce flow",
        );
      }
      if (oauth.registration_endpoint && (!oauth.authorization_url || !oauth.token_url) && !oauth.issuer) {
        issue(
          ["oauth", "issuer"],
          "is required for the dcr_pkce flow unless authorization_url and token_url are both given",
        );
      }
    }
  }

  if (oauth) {
    if (flow === "dcr_pkce" && oauth.client_id) {
      issue(
        ["oauth", "client_id"],
        "must not be set for the dcr_pkce flow (the client id comes from registration)",
      );
    }
    if (flow === "dcr_pkce" && oauth.pkce === false)
      issue(["oauth", "pkce"], "must be true for the dcr_pkce flow");
    const templated =
      OAUTH_URL_FIELDS.some((field) => oauth[field]?.startsWith(BASE_URL_PLACEHOLDER)) ||
      apiUrlEntries(value.api_url).some((entry) => entry.startsWith(BASE_URL_PLACEHOLDER));
    if (oauth.base_url && !templated)
      issue(["oauth", "base_url"], `is set but no URL uses ${BASE_URL_PLACEHOLDER}`);
  } else {
    apiUrlEntries(value.api_url).forEach((entry, index) => {
      if (entry.startsWith(BASE_URL_PLACEHOLDER)) {
        issue(
          typeof value.api_url === "string" ? ["api_url"] : ["api_url", index],
          `${BASE_URL_PLACEHOLDER} is only available to oauth2 providers`,
        );
      }
    });
  }
  if (oauth?.base_url?.includes(BASE_URL_PLACEHOLDER)) {
    issue(["oauth", "base_url"], `must not itself contain ${BASE_URL_PLACEHOLDER}`);
  }

  const seen = new Set<string>();
  value.env.forEach((name, index) => {
    if (seen.has(name)) issue(["env", index], `duplicates ${name}`);
    seen.add(name);
  });
}

function applyFlowDefaults<T extends DefinitionShapeOutput>(value: T): T {
  if (!value.oauth || value.oauth.token_auth_method) return value;
  return { ...value, oauth: { ...value.oauth, token_auth_method: defaultTokenAuthMethod(value.flow) } };
}

// ---------------------------------------------------------------------------------------------
// Public schemas and types
// ---------------------------------------------------------------------------------------------

/** What a provider JSON file or a registration request holds. `source` is not allowed here. */
export const ProviderDefinitionSchema = z
  .strictObject(definitionShape)
  .superRefine(checkDefinition)
  .overwrite(applyFlowDefaults)
  .meta({ id: "ProviderDefinition", description: "A provider definition, as written in its JSON file." });

/** A provider as the daemon knows it: the definition plus where it came from. */
export const ProviderSchema = z
  .strictObject({
    ...definitionShape,
    source: SourceSchema.meta({
      description: "bundled (shipped with svc) or custom (registered by the user).",
    }),
  })
  .superRefine(checkDefinition)
  .overwrite(applyFlowDefaults)
  .meta({ id: "Provider", description: "A provider definition with its source." });

/** The short form used in listings. */
export const ProviderSummarySchema = z
  .strictObject({
    name: definitionShape.name,
    display_name: definitionShape.display_name,
    auth_type: AuthTypeSchema,
    flow: FlowSchema,
    source: SourceSchema,
  })
  .meta({ id: "ProviderSummary" });

export type OAuthConfig = z.output<typeof OAuthConfigSchema> & { token_auth_method: TokenAuthMethod };
export type ApiKeyConfig = z.output<typeof ApiKeyConfigSchema>;
/** A parsed definition: defaults applied, `oauth.token_auth_method` always set. */
export type ProviderDefinition = Omit<z.output<typeof ProviderDefinitionSchema>, "oauth"> & {
  oauth?: OAuthConfig;
};
/** What a file or request may hold before defaults. */
export type ProviderDefinitionInput = z.input<typeof ProviderDefinitionSchema>;
export type Provider = ProviderDefinition & { source: ProviderSource };
export type ProviderSummary = z.output<typeof ProviderSummarySchema>;

// ---------------------------------------------------------------------------------------------
// Parsing helpers
// ---------------------------------------------------------------------------------------------

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out;
}

/**
 * Turns zod issues into one line: `path: reason; path: reason`. Unknown keys become one entry
 * each (`oauth.scope: unknown field`), and a top-level `source` says why it is refused.
 */
export function formatZodIssues(issues: readonly core.$ZodIssue[], input?: unknown): string {
  const parts: string[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = formatPath([...issue.path, key]);
        parts.push(
          issue.path.length === 0 && key === "source"
            ? `${path}: is derived (bundled or custom) and must not appear in a provider definition`
            : `${path}: unknown field`,
        );
      }
      continue;
    }
    let message = issue.message;
    // A record key that fails its pattern: say why, not just "Invalid key in record".
    if (issue.code === "invalid_key" && issue.issues[0]) message = issue.issues[0].message;
    else if (issue.code === "invalid_type" && / received undefined$/.test(message)) message = "is required";
    else if (
      message === "Invalid input" &&
      input !== undefined &&
      issue.path.length > 0 &&
      valueAt(input, issue.path) === undefined
    ) {
      // A missing field that a union or refinement checks would otherwise say "Invalid input".
      message = "is required";
    }
    parts.push(`${formatPath(issue.path) || "(definition)"}: ${message}`);
  }
  return parts.join("; ");
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/** Parses a provider definition (a file's JSON or a request body); throws InvalidInputError. */
export function parseProviderDefinition(json: unknown): ProviderDefinition {
  const result = ProviderDefinitionSchema.safeParse(json);
  if (!result.success) {
    throw new InvalidInputError(
      `invalid provider definition: ${formatZodIssues(result.error.issues, json)}`,
      {
        cause: result.error,
      },
    );
  }
  return result.data as ProviderDefinition;
}

/** Parses a provider with its source (as stored or sent by the daemon); throws InvalidInputError. */
export function parseProvider(json: unknown): Provider {
  const result = ProviderSchema.safeParse(json);
  if (!result.success) {
    throw new InvalidInputError(`invalid provider: ${formatZodIssues(result.error.issues, json)}`, {
      cause: result.error,
    });
  }
  return result.data as Provider;
}

/** The `api_url` entries as a list. */
export function providerApiUrls(provider: Pick<ProviderDefinition, "api_url">): string[] {
  return apiUrlEntries(provider.api_url);
}

/** The listing form of a provider. */
export function toProviderSummary(provider: Provider): ProviderSummary {
  const { name, display_name, auth_type, flow, source } = provider;
  return { name, display_name, auth_type, flow, source };
}
