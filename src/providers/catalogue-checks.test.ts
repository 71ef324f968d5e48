import { describe, expect, it } from "vitest";
import { loadBundledProviders } from "./catalogue.ts";
import { checkCatalogue } from "./catalogue-checks.ts";
import { type ProviderDefinition, parseProviderDefinition } from "./schema.ts";

const docs = "https://docs.example.com/api";

function apiKeyProvider(name: string, extra: Record<string, unknown> = {}): ProviderDefinition {
  return parseProviderDefinition({
    name,
    display_name: name,
    description: "A test provider.",
    auth_type: "api_key",
    flow: "api_key",
    api_url: `api.${name}.example.com`,
    api_key: { env_var: `${name.toUpperCase()}_KEY` },
    env: [`${name.toUpperCase()}_KEY`],
    docs_url: docs,
    sources: { api_url: docs, api_key: docs },
    checked: "2026-11-23",
    ...extra,
  });
}

describe("checkCatalogue", () => {
  it("finds nothing wrong with the bundled catalogue", () => {
    expect(checkCatalogue(loadBundledProviders())).toEqual([]);
  });

  it("gives every provider sources, and a checked date only to files re-read against them", () => {
    const providers = loadBundledProviders();
    for (const provider of providers) {
      expect(provider.sources, provider.name).toBeDefined();
      if (provider.checked !== undefined)
        expect(provider.checked, provider.name).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    // The files seeded from their own docs_url were never re-read: they carry no date.
    expect(providers.filter((provider) => provider.checked === undefined).length).toBeGreaterThan(0);
  });

  it("refuses a host claimed by two providers that do not declare each other", () => {
    const a = apiKeyProvider("alpha", { api_url: "api.shared.example.com" });
    const b = apiKeyProvider("beta", { api_url: "api.shared.example.com" });
    expect(checkCatalogue([a, b])).toEqual([
      "alpha and beta both claim https://api.shared.example.com/ without declaring shares_with",
    ]);
    const paired = checkCatalogue([
      { ...a, shares_with: ["beta"] },
      { ...b, shares_with: ["beta", "alpha"] },
    ]);
    expect(paired).toEqual([]);
  });

  it("refuses a one-sided shares_with", () => {
    const a = apiKeyProvider("alpha", { shares_with: ["beta"] });
    expect(checkCatalogue([a, apiKeyProvider("beta")])).toEqual([
      "alpha: shares_with beta, which does not name it back",
    ]);
  });

  it("refuses an environment variable set by two unpaired providers", () => {
    const a = apiKeyProvider("alpha", { env: ["ALPHA_KEY", "COMMON_TOKEN"] });
    const b = apiKeyProvider("beta", { env: ["BETA_KEY", "COMMON_TOKEN"] });
    expect(checkCatalogue([a, b])).toEqual([
      "alpha and beta both set COMMON_TOKEN without declaring shares_with",
    ]);
  });

  it("refuses an SDK variable missing from env", () => {
    expect(checkCatalogue([apiKeyProvider("alpha", { env: [] })])).toEqual([
      "alpha: api_key.env_var ALPHA_KEY is not in env",
    ]);
  });

  it("refuses http URLs, even on loopback", () => {
    const problems = checkCatalogue([
      apiKeyProvider("alpha", {
        docs_url: "http://127.0.0.1/docs",
        sources: { api_url: docs, api_key: docs },
      }),
    ]);
    expect(problems).toEqual(["alpha: docs_url http://127.0.0.1/docs is not https"]);
  });

  it("refuses missing sources and sources for absent fields", () => {
    const wrong = apiKeyProvider("alpha", { sources: { api_url: docs, "api_key.key_pattern": docs } });
    expect(checkCatalogue([wrong])).toEqual([
      "alpha: sources names api_key.key_pattern, which the definition lacks",
    ]);
    const { sources: _sources, ...unsourced } = apiKeyProvider("beta");
    expect(checkCatalogue([unsourced as ProviderDefinition])).toEqual([
      "beta: sources names no page for api_url",
      "beta: sources names no page for api_key",
    ]);
  });

  it("accepts sources that were not re-checked: the file then carries no date", () => {
    const { checked: _checked, ...undated } = apiKeyProvider("alpha");
    expect(checkCatalogue([undated as ProviderDefinition])).toEqual([]);
  });

  it("refuses a checked date in the future: a date says when the sources were read", () => {
    expect(checkCatalogue([apiKeyProvider("alpha", { checked: "2999-01-01" })])).toEqual([
      "alpha: checked 2999-01-01 is in the future",
    ]);
  });

  it("refuses an authorization code flow with neither PKCE nor a client secret", () => {
    const provider = parseProviderDefinition({
      name: "nopkce",
      display_name: "No PKCE",
      description: "A test provider.",
      auth_type: "oauth2",
      flow: "pkce",
      api_url: "api.nopkce.example.com",
      oauth: {
        authorization_url: "https://nopkce.example.com/authorize",
        token_url: "https://nopkce.example.com/token",
        pkce: false,
        token_auth_method: "none",
      },
      docs_url: docs,
      sources: { api_url: docs, oauth: docs },
      checked: "2026-11-23",
    });
    expect(checkCatalogue([provider])).toEqual([
      "nopkce: an authorization code without PKCE needs a client secret",
    ]);
  });
});
