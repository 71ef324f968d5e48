import { describe, expect, it } from "vitest";
import { z } from "zod";
import { InvalidInputError } from "../core/errors.ts";
import {
  checkApiUrlEntry,
  checkHttpsUrl,
  defaultTokenAuthMethod,
  formatZodIssues,
  ProviderDefinitionSchema,
  ProviderSchema,
  ProviderSummarySchema,
  parseProvider,
  parseProviderDefinition,
  providerApiUrls,
  toProviderSummary,
} from "./schema.ts";

const apiKeyProvider = {
  name: "example",
  display_name: "Example",
  description: "An example API.",
  auth_type: "api_key",
  flow: "api_key",
  api_url: "api.example.com",
  api_key: { env_var: "EXAMPLE_API_KEY" },
  docs_url: "https://docs.example.com/auth",
};

const pkceProvider = {
  name: "example-oauth",
  display_name: "Example OAuth",
  description: "An example OAuth API.",
  auth_type: "oauth2",
  flow: "pkce",
  api_url: ["api.example.com", "https://example.com/api/v2"],
  oauth: {
    authorization_url: "https://example.com/oauth/authorize",
    token_url: "https://example.com/oauth/token",
    scopes: ["read"],
  },
  docs_url: "https://docs.example.com/oauth",
};

/** The message parseProviderDefinition throws for `input` (fails the test if it parses). */
function refusal(input: unknown): string {
  try {
    parseProviderDefinition(input);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error("expected the definition to be refused");
}

describe("ProviderDefinitionSchema defaults", () => {
  it("fills api_key header defaults and env", () => {
    const parsed = parseProviderDefinition(apiKeyProvider);
    expect(parsed.api_key).toEqual({
      header_name: "Authorization",
      header_prefix: "Bearer",
      env_var: "EXAMPLE_API_KEY",
    });
    expect(parsed.env).toEqual([]);
  });

  it("keeps an explicit null prefix (raw key)", () => {
    const parsed = parseProviderDefinition({
      ...apiKeyProvider,
      api_key: { header_name: "x-api-key", header_prefix: null },
    });
    expect(parsed.api_key?.header_prefix).toBeNull();
    expect(parsed.api_key?.header_name).toBe("x-api-key");
  });

  it("fills oauth defaults, with the token endpoint auth method depending on the flow", () => {
    const parsed = parseProviderDefinition(pkceProvider);
    expect(parsed.oauth).toMatchObject({
      scope_separator: " ",
      pkce: true,
      token_auth_method: "client_secret_post",
    });
    const device = parseProviderDefinition({
      ...pkceProvider,
      flow: "device_code",
      oauth: {
        device_authorization_url: "https://example.com/device",
        token_url: "https://example.com/token",
      },
    });
    expect(device.oauth?.token_auth_method).toBe("none");
    expect(device.oauth?.scopes).toEqual([]);
    expect(defaultTokenAuthMethod("dcr_pkce")).toBe("none");
  });

  it("keeps an explicit token_auth_method", () => {
    const parsed = parseProviderDefinition({
      ...pkceProvider,
      oauth: { ...pkceProvider.oauth, token_auth_method: "client_secret_basic" },
    });
    expect(parsed.oauth?.token_auth_method).toBe("client_secret_basic");
  });
});

describe("ProviderDefinitionSchema accepts", () => {
  it("loopback http endpoints", () => {
    expect(() =>
      parseProviderDefinition({
        ...pkceProvider,
        oauth: {
          authorization_url: "http://localhost:8080/authorize",
          token_url: "http://127.0.0.1:8080/token",
        },
      }),
    ).not.toThrow();
    expect(() =>
      parseProviderDefinition({
        ...pkceProvider,
        oauth: { authorization_url: "http://[::1]:9000/authorize", token_url: "http://[::1]:9000/token" },
      }),
    ).not.toThrow();
  });

  it("{base_url} templates with a default base_url", () => {
    const parsed = parseProviderDefinition({
      ...pkceProvider,
      api_url: "{base_url}/api/v1",
      oauth: {
        authorization_url: "{base_url}/oauth2/v1/authorize",
        token_url: "{base_url}/oauth2/v1/token",
        base_url: "https://tenant.okta.com",
      },
    });
    expect(parsed.oauth?.base_url).toBe("https://tenant.okta.com");
  });

  it("dcr_pkce with only an issuer, or with a registration endpoint and the two endpoints", () => {
    const dcr = { ...pkceProvider, flow: "dcr_pkce", api_url: "https://mcp.example.com" };
    expect(() =>
      parseProviderDefinition({ ...dcr, oauth: { issuer: "https://mcp.example.com" } }),
    ).not.toThrow();
    expect(() =>
      parseProviderDefinition({
        ...dcr,
        oauth: {
          registration_endpoint: "https://mcp.example.com/register",
          authorization_url: "https://mcp.example.com/authorize",
          token_url: "https://mcp.example.com/token",
        },
      }),
    ).not.toThrow();
  });

  it("api_url hosts, ports, path prefixes and compiling regexes", () => {
    expect(checkApiUrlEntry("api.github.com")).toBeUndefined();
    expect(checkApiUrlEntry("localhost:8080")).toBeUndefined();
    expect(checkApiUrlEntry("https://slack.com/api")).toBeUndefined();
    expect(checkApiUrlEntry(String.raw`regex:^https://[a-z0-9-]+\.googleapis\.com/`)).toBeUndefined();
    expect(providerApiUrls({ api_url: "a.example.com" })).toEqual(["a.example.com"]);
    expect(providerApiUrls({ api_url: ["a.example.com", "b.example.com"] })).toEqual([
      "a.example.com",
      "b.example.com",
    ]);
  });
});

describe("ProviderDefinitionSchema refuses, naming the field", () => {
  it("bad types", () => {
    const message = refusal({ ...apiKeyProvider, display_name: 42, env: "OPENAI_API_KEY" });
    expect(message).toMatch(/display_name: Invalid input: expected string/);
    expect(message).toMatch(/env: Invalid input: expected array/);
  });

  it("missing required fields", () => {
    const { docs_url: _docs, ...rest } = apiKeyProvider;
    expect(refusal(rest)).toMatch(/docs_url: is required/);
  });

  it("a non-object", () => {
    expect(refusal("github")).toMatch(/\(definition\): Invalid input: expected object/);
  });

  it("http endpoints outside loopback", () => {
    const message = refusal({
      ...pkceProvider,
      oauth: { ...pkceProvider.oauth, token_url: "http://example.com/token" },
    });
    expect(message).toContain("oauth.token_url: must use https (loopback hosts excepted)");
  });

  it("relative or malformed URLs", () => {
    expect(
      refusal({ ...pkceProvider, oauth: { ...pkceProvider.oauth, authorization_url: "/authorize" } }),
    ).toContain("oauth.authorization_url: must be an absolute URL");
    expect(refusal({ ...apiKeyProvider, docs_url: "ftp://example.com" })).toContain(
      "docs_url: must be an http(s) URL",
    );
    expect(refusal({ ...apiKeyProvider, docs_url: "https://example.com/{base_url}" })).toContain(
      "docs_url: must not contain {base_url}",
    );
  });

  it("unsafe names", () => {
    for (const name of ["../x", "Upper", "-dash", "a/b", "", "x".repeat(64), "a b"]) {
      expect(refusal({ ...apiKeyProvider, name })).toMatch(
        /^invalid provider definition: name: must be 1-63 characters/,
      );
    }
  });

  it("flow and auth_type mismatches", () => {
    expect(refusal({ ...apiKeyProvider, flow: "pkce" })).toContain(
      'flow: must be "api_key" when auth_type is "api_key"',
    );
    expect(refusal({ ...pkceProvider, flow: "api_key" })).toContain(
      'flow: must be one of pkce, device_code, dcr_pkce when auth_type is "oauth2"',
    );
    expect(refusal({ ...pkceProvider, flow: "magic" })).toMatch(/flow: Invalid option/);
  });

  it("sections that do not belong to the auth type, or are missing", () => {
    expect(refusal({ ...apiKeyProvider, api_key: undefined })).toContain(
      'api_key: is required when auth_type is "api_key"',
    );
    expect(refusal({ ...apiKeyProvider, oauth: pkceProvider.oauth })).toContain(
      'oauth: is only allowed when auth_type is "oauth2"',
    );
    expect(refusal({ ...pkceProvider, oauth: undefined })).toContain(
      'oauth: is required when auth_type is "oauth2"',
    );
    expect(refusal({ ...pkceProvider, api_key: {} })).toContain(
      'api_key: is only allowed when auth_type is "api_key"',
    );
  });

  it("oauth sections lacking what the flow needs", () => {
    expect(refusal({ ...pkceProvider, oauth: { token_url: "https://example.com/token" } })).toContain(
      "oauth.authorization_url: is required for the pkce flow",
    );
    const device = refusal({
      ...pkceProvider,
      flow: "device_code",
      oauth: { token_url: "https://example.com/token" },
    });
    expect(device).toContain("oauth.device_authorization_url: is required for the device_code flow");
    const dcr = refusal({ ...pkceProvider, flow: "dcr_pkce", oauth: {} });
    expect(dcr).toContain(
      "oauth.registration_endpoint: or oauth.issuer (for RFC 8414 discovery) is required",
    );
    const dcrWithoutEndpoints = refusal({
      ...pkceProvider,
      flow: "dcr_pkce",
      oauth: { registration_endpoint: "https://mcp.example.com/register" },
    });
    expect(dcrWithoutEndpoints).toContain("oauth.issuer: is required for the dcr_pkce flow");
    expect(
      refusal({
        ...pkceProvider,
        flow: "dcr_pkce",
        oauth: { issuer: "https://mcp.example.com", client_id: "abc" },
      }),
    ).toContain("oauth.client_id: must not be set for the dcr_pkce flow");
  });

  it("unknown keys, at the top level and inside sections", () => {
    const message = refusal({
      ...pkceProvider,
      scope: "read",
      oauth: { ...pkceProvider.oauth, scope: "read" },
    });
    expect(message).toContain("scope: unknown field");
    expect(message).toContain("oauth.scope: unknown field");
    expect(refusal({ ...apiKeyProvider, api_key: { header: "x-api-key" } })).toContain(
      "api_key.header: unknown field",
    );
  });

  it("a source field in the file", () => {
    expect(refusal({ ...apiKeyProvider, source: "bundled" })).toContain(
      "source: is derived (bundled or custom) and must not appear in a provider definition",
    );
  });

  it("bad regular expressions", () => {
    expect(refusal({ ...apiKeyProvider, api_key: { key_pattern: "sk-[" } })).toMatch(
      /api_key\.key_pattern: is not a valid regular expression/,
    );
    expect(refusal({ ...apiKeyProvider, api_url: ["api.example.com", "regex:(unclosed"] })).toMatch(
      /api_url\[1\]: regex is not a valid regular expression/,
    );
    expect(refusal({ ...apiKeyProvider, api_url: "regex:" })).toContain(
      "api_url: regex must not be an empty pattern",
    );
  });

  it("malformed api_url entries", () => {
    expect(refusal({ ...apiKeyProvider, api_url: "API.Example.com" })).toMatch(
      /api_url: must be a lower-case host/,
    );
    expect(refusal({ ...apiKeyProvider, api_url: "http://api.example.com" })).toContain(
      "api_url: must use https (loopback hosts excepted)",
    );
    expect(refusal({ ...apiKeyProvider, api_url: "https://api.example.com/v1?x=1" })).toContain(
      "api_url: must not contain a query string",
    );
    expect(refusal({ ...apiKeyProvider, api_url: [] })).toMatch(/api_url: /);
    expect(refusal({ ...apiKeyProvider, api_url: "{base_url}/api" })).toContain(
      "api_url: {base_url} is only available to oauth2 providers",
    );
  });

  it("misplaced {base_url} placeholders and an unused base_url", () => {
    expect(
      refusal({ ...pkceProvider, oauth: { ...pkceProvider.oauth, token_url: "https://{base_url}/token" } }),
    ).toContain("oauth.token_url: {base_url} may only appear once, at the start of the URL");
    expect(
      refusal({ ...pkceProvider, oauth: { ...pkceProvider.oauth, token_url: "{base_url}token" } }),
    ).toContain('oauth.token_url: {base_url} must be followed by "/" or nothing');
    expect(
      refusal({ ...pkceProvider, oauth: { ...pkceProvider.oauth, base_url: "https://tenant.example.com" } }),
    ).toContain("oauth.base_url: is set but no URL uses {base_url}");
  });

  it("bad header names, env var names and empty prefixes", () => {
    expect(refusal({ ...apiKeyProvider, api_key: { header_name: "x api key" } })).toContain(
      "api_key.header_name: must be an HTTP header name",
    );
    expect(refusal({ ...apiKeyProvider, env: ["OK", "NOT-OK"] })).toMatch(
      /env\[1\]: must be an environment variable name/,
    );
    expect(refusal({ ...apiKeyProvider, env: ["A", "A"] })).toContain("env[1]: duplicates A");
    expect(refusal({ ...apiKeyProvider, api_key: { header_prefix: "" } })).toContain(
      "api_key.header_prefix: must not be empty (use null for the raw key)",
    );
  });

  it("credentials and fragments in URLs", () => {
    expect(
      refusal({
        ...pkceProvider,
        oauth: { ...pkceProvider.oauth, token_url: "https://user:pw@example.com/token" },
      }),
    ).toContain("oauth.token_url: must not contain credentials");
    expect(checkHttpsUrl("https://example.com/a#b")).toBe("must not contain a fragment");
  });
});

describe("ProviderSchema and summaries", () => {
  it("requires a source", () => {
    expect(ProviderSchema.safeParse(apiKeyProvider).success).toBe(false);
    const provider = parseProvider({ ...apiKeyProvider, source: "custom" });
    expect(provider.source).toBe("custom");
    expect(() => parseProvider({ ...apiKeyProvider, source: "elsewhere" })).toThrow(/source: Invalid option/);
  });

  it("summarises a provider", () => {
    const summary = toProviderSummary(parseProvider({ ...pkceProvider, source: "bundled" }));
    expect(summary).toEqual({
      name: "example-oauth",
      display_name: "Example OAuth",
      auth_type: "oauth2",
      flow: "pkce",
      source: "bundled",
    });
    expect(ProviderSummarySchema.parse(summary)).toEqual(summary);
  });

  it("converts to JSON Schema for /openapi.json", () => {
    for (const schema of [ProviderDefinitionSchema, ProviderSchema, ProviderSummarySchema]) {
      expect(() => z.toJSONSchema(schema, { io: "input" })).not.toThrow();
      expect(() => z.toJSONSchema(schema, { io: "output" })).not.toThrow();
    }
    const json = z.toJSONSchema(ProviderDefinitionSchema, { io: "input" }) as {
      $defs?: Record<string, unknown>;
    };
    expect(JSON.stringify(json)).toContain('"additionalProperties":false');
  });
});

describe("formatZodIssues", () => {
  it("joins issues as path: reason, with array indices in brackets", () => {
    const result = ProviderDefinitionSchema.safeParse({ ...apiKeyProvider, env: [1], extra: true });
    expect(result.success).toBe(false);
    if (!result.success) {
      const text = formatZodIssues(result.error.issues);
      expect(text).toContain("env[0]: Invalid input: expected string, received number");
      expect(text).toContain("extra: unknown field");
      expect(text.split("; ").length).toBe(2);
    }
  });
});

describe("aws_sigv4 providers", () => {
  const signedProvider = {
    name: "minio-aws",
    display_name: "Signed example",
    description: "An AWS API signed by the daemon.",
    auth_type: "aws_sigv4",
    flow: "api_key",
    api_url: "regex:^https://([a-z0-9-]+\\.)+amazonaws\\.com/",
    env: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
    docs_url: "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html",
  };

  it("are accepted with neither an oauth nor an api_key section", () => {
    expect(parseProviderDefinition(signedProvider).auth_type).toBe("aws_sigv4");
  });

  it("log in with the api_key flow, and take no api_key or oauth section", () => {
    const message = refusal({
      ...signedProvider,
      flow: "pkce",
      api_key: {},
      oauth: pkceProvider.oauth,
    });
    expect(message).toContain('flow: must be "api_key" when auth_type is "aws_sigv4"');
    expect(message).toContain('api_key: is only allowed when auth_type is "api_key"');
    expect(message).toContain('oauth: is only allowed when auth_type is "oauth2"');
  });
});

describe("token formats and scope presets", () => {
  it("sends only documented token types, as the definition maps them", async () => {
    const { oauthAuthorization } = await import("./schema.ts");
    expect(oauthAuthorization(undefined, "Bearer", "t")).toBe("Bearer t");
    expect(oauthAuthorization(undefined, "bot", "t")).toBeUndefined();
    expect(oauthAuthorization({ token_types: { bot: "Bearer" } }, "BOT", "t")).toBe("Bearer t");
    expect(oauthAuthorization({ token_types: { bearer: null } }, "bearer", "t")).toBe("t");
  });

  it("expands preset names and keeps other scopes", async () => {
    const { expandScopePresets } = await import("./schema.ts");
    const oauth = { scope_presets: { gmail: ["https://www.googleapis.com/auth/gmail.modify"] } };
    expect(expandScopePresets(oauth, ["gmail", "openid", "gmail"])).toEqual([
      "https://www.googleapis.com/auth/gmail.modify",
      "openid",
    ]);
  });

  it("refuses an upper-case token type, a bad path, and a non-https app registration page", () => {
    const bad = {
      name: "x",
      display_name: "X",
      description: "x",
      auth_type: "oauth2",
      flow: "pkce",
      api_url: "api.x.example.com",
      oauth: {
        authorization_url: "https://x.example.com/a",
        token_url: "https://x.example.com/t",
        token_types: { Bearer: "Bearer" },
        token_path: "authed user",
        app_setup: { url: "http://x.example.com/apps", app_type: "an app" },
      },
      docs_url: "https://x.example.com/docs",
    };
    expect(() => parseProviderDefinition(bad)).toThrow(
      /oauth\.token_types\.Bearer: .*lower-case.*oauth\.token_path: .*oauth\.app_setup\.url: must use https/,
    );
  });
});
