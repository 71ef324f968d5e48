/**
 * Rules the bundled catalogue keeps as a whole, beyond what the schema checks per file: flows that
 * match the endpoints present, hosts and variables claimed twice only by declared pairs, every SDK
 * variable among the placeholders, https everywhere, and a source for every field (with a date only
 * when the fields were re-read against it).
 * `checkCatalogue` returns one line per problem (empty when the catalogue is sound).
 */
import { oauthEndpoints, RouteTable } from "./routing.ts";
import {
  API_URL_REGEX_PREFIX,
  BASE_URL_PLACEHOLDER,
  OAUTH_URL_FIELDS,
  type ProviderDefinition,
  providerApiUrls,
} from "./schema.ts";

type Definition = ProviderDefinition;

/** A fixed tenant, so `{base_url}` entries of one provider can be compared with another's. */
const SAMPLE_TENANT = "https://tenant.example.com";

function shares(a: Definition, b: Definition): boolean {
  return Boolean(a.shares_with?.includes(b.name) && b.shares_with?.includes(a.name));
}

/** The flow's own endpoints must be named in the file: a bundled definition never relies on discovery for them. */
function flowProblems(provider: Definition): string[] {
  const oauth = provider.oauth;
  if (!oauth) return [];
  const problems: string[] = [];
  if (provider.flow === "dcr_pkce" && !oauth.registration_endpoint && !oauth.issuer) {
    problems.push(`${provider.name}: dcr_pkce needs a registration_endpoint or an issuer`);
  }
  if (oauth.pkce === false && oauth.token_auth_method === "none" && provider.flow !== "device_code") {
    problems.push(`${provider.name}: an authorization code without PKCE needs a client secret`);
  }
  if (oauth.scope_param && provider.flow === "device_code" && !oauth.authorization_url) {
    problems.push(`${provider.name}: scope_param only applies to the authorization request`);
  }
  return problems;
}

/** Every absolute URL in a definition, `{base_url}` replaced by the sample tenant. */
function urlsOf(provider: Definition): { field: string; value: string }[] {
  const out: { field: string; value: string }[] = [{ field: "docs_url", value: provider.docs_url }];
  for (const field of [...OAUTH_URL_FIELDS, "base_url"] as const) {
    const value = provider.oauth?.[field];
    if (value) out.push({ field: `oauth.${field}`, value });
  }
  if (provider.oauth?.app_setup)
    out.push({ field: "oauth.app_setup.url", value: provider.oauth.app_setup.url });
  for (const [field, value] of Object.entries(provider.sources ?? {})) {
    out.push({ field: `sources.${field}`, value });
  }
  providerApiUrls(provider).forEach((entry, index) => {
    if (!entry.startsWith(API_URL_REGEX_PREFIX) && (entry.includes("://") || entry.startsWith("{"))) {
      out.push({ field: `api_url[${index}]`, value: entry });
    }
  });
  return out.map(({ field, value }) => ({
    field,
    value: value.replace(BASE_URL_PLACEHOLDER, SAMPLE_TENANT),
  }));
}

function httpsProblems(provider: Definition): string[] {
  return urlsOf(provider)
    .filter(({ value }) => new URL(value).protocol !== "https:")
    .map(({ field, value }) => `${provider.name}: ${field} ${value} is not https`);
}

/**
 * `sources` names fields the definition has (a whole section, or one field in it). `checked` is
 * optional: it records the day the fields were last compared with their sources, so a file whose
 * sources were never re-read carries none, and no date lies in the future.
 */
function sourceProblems(provider: Definition, today: string): string[] {
  const problems: string[] = [];
  const sources = provider.sources ?? {};
  // A signed provider has no credential section: its auth_type is the documented scheme.
  const section = { oauth2: "oauth", api_key: "api_key", aws_sigv4: "auth_type" }[provider.auth_type];
  for (const needed of ["api_url", section]) {
    if (!Object.keys(sources).some((field) => field === needed || field.startsWith(`${needed}.`))) {
      problems.push(`${provider.name}: sources names no page for ${needed}`);
    }
  }
  for (const field of Object.keys(sources)) {
    let value: unknown = provider;
    for (const key of field.split(".")) {
      value =
        value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
    }
    if (value === undefined)
      problems.push(`${provider.name}: sources names ${field}, which the definition lacks`);
  }
  if (provider.checked && provider.checked > today) {
    problems.push(`${provider.name}: checked ${provider.checked} is in the future`);
  }
  return problems;
}

function pairProblems(providers: readonly Definition[]): string[] {
  const problems: string[] = [];
  const byName = new Map(providers.map((provider) => [provider.name, provider]));
  for (const provider of providers) {
    for (const other of provider.shares_with ?? []) {
      if (!byName.get(other)?.shares_with?.includes(provider.name)) {
        problems.push(`${provider.name}: shares_with ${other}, which does not name it back`);
      }
    }
  }
  // Hosts: two providers matching one sample URL at the same rank are ambiguous unless paired.
  const table = new RouteTable(providers.map((provider) => ({ provider, baseUrls: [SAMPLE_TENANT] })));
  const seen = new Set<string>();
  for (const provider of providers) {
    for (const entry of providerApiUrls(provider)) {
      if (entry.startsWith(API_URL_REGEX_PREFIX) || entry.startsWith(BASE_URL_PLACEHOLDER)) continue;
      const sample = new URL(entry.includes("://") ? entry : `https://${entry}/`);
      const candidates = table.candidates(sample);
      const top = candidates[0];
      if (!top) continue;
      for (const candidate of candidates.filter((c) => c.rank === top.rank && c.provider !== provider.name)) {
        const pair = [provider.name, candidate.provider].sort().join(" and ");
        if (seen.has(pair) || shares(provider, byName.get(candidate.provider)!)) continue;
        seen.add(pair);
        problems.push(`${pair} both claim ${sample.href} without declaring shares_with`);
      }
    }
  }
  // Environment variables: unique, or shared by a declared pair.
  const owners = new Map<string, Definition[]>();
  for (const provider of providers) {
    for (const name of provider.env) owners.set(name, [...(owners.get(name) ?? []), provider]);
  }
  for (const [name, list] of owners) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        if (!shares(list[i]!, list[j]!)) {
          problems.push(
            `${list[i]!.name} and ${list[j]!.name} both set ${name} without declaring shares_with`,
          );
        }
      }
    }
  }
  return problems;
}

/** An API host must not be an OAuth endpoint of the same provider's only flow (nothing could be injected). */
function endpointProblems(provider: Definition): string[] {
  const table = new RouteTable([{ provider, baseUrls: [SAMPLE_TENANT] }]);
  return providerApiUrls(provider)
    .filter((entry) => !entry.startsWith(API_URL_REGEX_PREFIX))
    .map((entry) => entry.replace(BASE_URL_PLACEHOLDER, SAMPLE_TENANT))
    .filter((entry) => {
      const url = new URL(entry.includes("://") ? entry : `https://${entry}/`);
      return table.isOAuthEndpoint(url) && oauthEndpoints(provider, SAMPLE_TENANT).length > 0;
    })
    .map((entry) => `${provider.name}: api_url ${entry} is one of its own OAuth endpoints`);
}

export function checkCatalogue(
  providers: readonly Definition[],
  today: string = new Date().toISOString().slice(0, 10),
): string[] {
  return [
    ...providers.flatMap((provider) => [
      ...flowProblems(provider),
      ...httpsProblems(provider),
      ...sourceProblems(provider, today),
      ...endpointProblems(provider),
      ...(provider.api_key?.env_var && !provider.env.includes(provider.api_key.env_var)
        ? [`${provider.name}: api_key.env_var ${provider.api_key.env_var} is not in env`]
        : []),
    ]),
    ...pairProblems(providers),
  ];
}
