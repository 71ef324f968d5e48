import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLED_PROVIDERS_DIR, loadBundledProviders, parseBundledProviderFile } from "./catalogue.ts";
import { renderBundledTable, withBundledTable } from "./catalogue-table.ts";
import {
  API_URL_REGEX_PREFIX,
  BASE_URL_PLACEHOLDER,
  FLOWS,
  OAUTH_URL_FIELDS,
  PROVIDER_NAME_PATTERN,
  type Provider,
  ProviderDefinitionSchema,
  ProviderSchema,
  providerApiUrls,
} from "./schema.ts";

const files = readdirSync(BUNDLED_PROVIDERS_DIR)
  .filter((file) => file.endsWith(".json"))
  .sort();
const providers = loadBundledProviders();
const byName = new Map(providers.map((provider) => [provider.name, provider]));

/** Every absolute URL a provider mentions, with `{base_url}` replaced by a dummy tenant. */
function urlsOf(provider: Provider): { field: string; value: string }[] {
  const out: { field: string; value: string }[] = [{ field: "docs_url", value: provider.docs_url }];
  if (provider.oauth) {
    const { oauth } = provider;
    for (const field of [...OAUTH_URL_FIELDS, "base_url"] as const) {
      const value = oauth[field];
      if (value) out.push({ field: `oauth.${field}`, value });
    }
  }
  providerApiUrls(provider).forEach((entry, index) => {
    if (
      !entry.startsWith(API_URL_REGEX_PREFIX) &&
      (entry.includes("://") || entry.startsWith(BASE_URL_PLACEHOLDER))
    ) {
      out.push({ field: `api_url[${index}]`, value: entry });
    }
  });
  return out.map(({ field, value }) => ({
    field,
    value: value.replace(BASE_URL_PLACEHOLDER, "https://tenant.example.com"),
  }));
}

describe("bundled provider files", () => {
  it("holds at least 140 providers", () => {
    expect(files.length).toBeGreaterThanOrEqual(140);
    expect(providers).toHaveLength(files.length);
  });

  it.each(files)("%s validates against ProviderDefinitionSchema", (file) => {
    const json: unknown = JSON.parse(readFileSync(join(BUNDLED_PROVIDERS_DIR, file), "utf8"));
    const result = ProviderDefinitionSchema.safeParse(json);
    expect(result.success ? [] : result.error.issues).toEqual([]);
  });

  it.each(files)("%s is named after its provider and holds no source", (file) => {
    const json = JSON.parse(readFileSync(join(BUNDLED_PROVIDERS_DIR, file), "utf8")) as Record<
      string,
      unknown
    >;
    expect(`${String(json.name)}.json`).toBe(file);
    expect(json).not.toHaveProperty("source");
  });

  it("has unique, filesystem-safe names", () => {
    const names = providers.map((provider) => provider.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(PROVIDER_NAME_PATTERN);
  });

  it("represents every flow, including device code and dynamic client registration", () => {
    const flows = new Set(providers.map((provider) => provider.flow));
    expect([...flows].sort()).toEqual([...FLOWS].sort());
    const count = (flow: string) => providers.filter((provider) => provider.flow === flow).length;
    expect(count("device_code")).toBeGreaterThanOrEqual(3);
    expect(count("dcr_pkce")).toBeGreaterThanOrEqual(3);
    expect(count("pkce")).toBeGreaterThanOrEqual(10);
    expect(count("api_key")).toBeGreaterThanOrEqual(30);
  });

  it("covers the providers people use most", () => {
    const expected = [
      "github",
      "gitlab",
      "bitbucket",
      "google",
      "microsoft",
      "slack",
      "notion",
      "linear",
      "atlassian",
      "discord",
      "hubspot",
      "salesforce",
      "stripe",
      "twilio",
      "sendgrid",
      "resend",
      "airtable",
      "asana",
      "figma",
      "dropbox",
      "zoom",
      "shopify",
      "sentry",
      "vercel",
      "cloudflare",
      "openai",
      "anthropic",
      "mistral",
      "groq",
      "together",
      "perplexity",
      "openrouter",
      "cohere",
      "gemini",
      "huggingface",
      "replicate",
      "fireworks",
      "deepseek",
      "xai",
      "notion-mcp",
      "linear-mcp",
      "sentry-mcp",
    ];
    expect(expected.filter((name) => !byName.has(name))).toEqual([]);
  });

  it("uses the device flow for github and microsoft, the browser flow for google, and DCR for the hosted MCP servers", () => {
    for (const name of ["github", "microsoft"]) expect(byName.get(name)?.flow).toBe("device_code");
    // Google's device flow refuses most scopes (Gmail, Calendar, full Drive).
    expect(byName.get("google")?.flow).toBe("pkce");
    for (const name of ["notion-mcp", "linear-mcp", "sentry-mcp"])
      expect(byName.get(name)?.flow).toBe("dcr_pkce");
  });

  it("sends raw keys where the provider documents it", () => {
    expect(byName.get("anthropic")?.api_key).toMatchObject({ header_name: "x-api-key", header_prefix: null });
    expect(byName.get("gemini")?.api_key).toMatchObject({
      header_name: "x-goog-api-key",
      header_prefix: null,
    });
    expect(byName.get("openai")?.api_key).toMatchObject({
      header_name: "Authorization",
      header_prefix: "Bearer",
      env_var: "OPENAI_API_KEY",
    });
  });

  it("includes multi-tenant providers templated with {base_url}", () => {
    const templated = providers.filter((provider) => JSON.stringify(provider).includes(BASE_URL_PLACEHOLDER));
    expect(templated.length).toBeGreaterThanOrEqual(4);
    expect(templated.map((provider) => provider.name)).toEqual(
      expect.arrayContaining(["okta", "auth0", "salesforce", "gitlab"]),
    );
  });

  it.each(providers.map((provider) => [provider.name, provider] as const))(
    "%s has well-formed URLs, https docs and a consistent api section",
    (_name, provider) => {
      expect(new URL(provider.docs_url).protocol).toBe("https:");
      for (const { field, value } of urlsOf(provider)) {
        const url = new URL(value);
        expect(url.protocol, field).toBe("https:");
        expect(url.hostname, field).not.toBe("");
        expect(url.hash, field).toBe("");
      }
      for (const entry of providerApiUrls(provider)) {
        if (entry.startsWith(API_URL_REGEX_PREFIX)) {
          expect(() => new RegExp(entry.slice(API_URL_REGEX_PREFIX.length))).not.toThrow();
        }
      }
      if (provider.auth_type === "api_key") {
        expect(provider.api_key).toBeDefined();
        if (provider.api_key?.env_var) expect(provider.env).toContain(provider.api_key.env_var);
      } else if (provider.auth_type === "aws_sigv4") {
        // SDKs must find placeholder keys to sign with, or they refuse to send anything.
        expect(provider.env).toEqual(expect.arrayContaining(["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]));
      } else {
        expect(provider.oauth?.token_auth_method).toBeDefined();
      }
      if (provider.api_key?.key_pattern)
        expect(() => new RegExp(provider.api_key?.key_pattern ?? "")).not.toThrow();
    },
  );
});

describe("loadBundledProviders", () => {
  it("tags every provider as bundled and matches ProviderSchema", () => {
    for (const provider of providers) {
      expect(provider.source).toBe("bundled");
      expect(ProviderSchema.safeParse(provider).success).toBe(true);
    }
  });

  it("returns copies sorted by name", () => {
    const names = providers.map((provider) => provider.name);
    expect(names).toEqual([...names].sort());
    const again = loadBundledProviders();
    expect(again).toEqual(providers);
    again[0]!.display_name = "changed";
    expect(loadBundledProviders()[0]?.display_name).not.toBe("changed");
  });

  it("applies schema defaults", () => {
    const openai = byName.get("openai");
    expect(openai?.api_key?.header_name).toBe("Authorization");
    const github = byName.get("github");
    expect(github?.oauth?.pkce).toBe(true);
    expect(github?.oauth?.scope_separator).toBe(" ");
  });
});

describe("parseBundledProviderFile", () => {
  const valid = readFileSync(join(BUNDLED_PROVIDERS_DIR, "openai.json"), "utf8");

  it("names the file when the JSON is malformed", () => {
    expect(() => parseBundledProviderFile("broken.json", "{")).toThrow(/broken\.json: not valid JSON/);
  });

  it("names the file and the field when the definition is invalid", () => {
    const bad = JSON.stringify({ ...JSON.parse(valid), docs_url: "http://example.com" });
    expect(() => parseBundledProviderFile("openai.json", bad)).toThrow(
      /openai\.json: docs_url: must use https \(loopback hosts excepted\)/,
    );
  });

  it("refuses a file whose name differs from the provider name", () => {
    expect(() => parseBundledProviderFile("other.json", valid)).toThrow(
      /other\.json: name "openai" requires the file openai\.json/,
    );
  });

  it("refuses a source field", () => {
    const bad = JSON.stringify({ ...JSON.parse(valid), source: "bundled" });
    expect(() => parseBundledProviderFile("openai.json", bad)).toThrow(/source: is derived/);
  });
});

describe("docs/providers.md", () => {
  it("tells a file re-read against its sources (with the date) from one whose sources were not re-checked", () => {
    const [checked, unchecked] = ["openai", "anthropic"].map((name) => ({ ...byName.get(name)! }));
    checked!.checked = "2026-11-23";
    delete unchecked!.checked;
    const table = renderBundledTable([checked!, unchecked!]);
    const rows = table.split("\n").filter((line) => line.startsWith("| `"));
    expect(rows[0]).toMatch(/\(verified 2026-11-23\)\s*\|$/);
    expect(rows[1]).toMatch(/\(sources not re-checked\)\s*\|$/);
    expect(table).toMatch(/1 verified against their sources, 1 not re-checked/);
  });

  it("lists exactly the bundled catalogue (regenerate with `npm run docs:providers`)", () => {
    const document = readFileSync(new URL("../../docs/providers.md", import.meta.url), "utf8");
    expect(document).toBe(withBundledTable(document, loadBundledProviders()));
  });
});
