/**
 * Which provider's credential belongs on a request URL. One compiled table serves the daemon's
 * credential resolve, the proxy's interception decision and the library's `fetch`, so all three
 * agree. Rules (docs/providers.md, "Route selection"):
 *
 * - a URL-prefix entry ranks by the length of its path, so `https://host/api/v2` beats
 *   `https://host/api` and both beat the bare host `host` (a prefix of `/`);
 * - any host or prefix entry beats a `regex:` entry;
 * - a request to any provider's OAuth endpoint (authorize, token, device, registration,
 *   revocation) never gets a credential;
 * - two providers matching at the same rank are ambiguous: nothing is injected.
 */
import {
  API_URL_REGEX_PREFIX,
  BASE_URL_PLACEHOLDER,
  OAUTH_URL_FIELDS,
  type ProviderDefinition,
  providerApiUrls,
} from "./schema.ts";

/** Rank of a regex entry; host and prefix entries rank above it by at least this. */
const REGEX_RANK = 0;
const HOST_RANK_BASE = 1_000_000;

interface CompiledEntry {
  provider: string;
  entry: string;
  /** Origin-and-path matcher or regex. */
  test: (url: URL) => boolean;
  /** Whether some request to this origin could match (what a proxy must intercept). */
  coversOrigin: (origin: URL) => boolean;
  rank: number;
  /** A host or prefix entry matches requests to this origin only (the table indexes it by that). */
  origin?: string;
}

/**
 * The host part of a `regex:` entry written as `^https://<host pattern>/...`: the pattern up to the
 * first `/` after the scheme, anchored at the end of the origin. Other regexes are tested against
 * the origin's root URL.
 */
function regexOriginTest(pattern: RegExp, source: string): (origin: URL) => boolean {
  const prefix = /^\^https:\/\//.exec(source)?.[0];
  const slash = prefix ? source.indexOf("/", prefix.length) : -1;
  if (prefix && slash > 0) {
    try {
      const host = new RegExp(`${source.slice(0, slash)}(?::\\d+)?$`);
      return (origin) => host.test(origin.origin);
    } catch {
      // Falls through to the root-URL test.
    }
  }
  return (origin) => pattern.test(origin.href);
}

export interface RouteCandidate {
  provider: string;
  /** The `api_url` entry that matched. */
  entry: string;
  rank: number;
}

/** What the table needs to know of a provider. */
export type RoutableProvider = Pick<ProviderDefinition, "name" | "api_url" | "oauth">;

function defaultPort(protocol: string): string {
  return protocol === "http:" ? "80" : "443";
}

function originOf(url: URL): string {
  return `${url.protocol}//${url.hostname}:${url.port || defaultPort(url.protocol)}`;
}

function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

/** Resolves a `{base_url}` entry; undefined when there is no base URL to put in. */
export function expandBaseUrl(value: string, baseUrl: string | undefined): string | undefined {
  if (!value.startsWith(BASE_URL_PLACEHOLDER)) return value;
  if (!baseUrl) return undefined;
  return baseUrl.replace(/\/+$/, "") + value.slice(BASE_URL_PLACEHOLDER.length);
}

function compileEntry(
  provider: string,
  entry: string,
  baseUrl: string | undefined,
): CompiledEntry | undefined {
  if (entry.startsWith(API_URL_REGEX_PREFIX)) {
    let pattern: RegExp;
    try {
      pattern = new RegExp(entry.slice(API_URL_REGEX_PREFIX.length));
    } catch {
      return undefined;
    }
    const source = entry.slice(API_URL_REGEX_PREFIX.length);
    return {
      provider,
      entry,
      rank: REGEX_RANK,
      test: (url) => pattern.test(url.href),
      coversOrigin: regexOriginTest(pattern, source),
    };
  }
  const resolved = expandBaseUrl(entry, baseUrl);
  if (resolved === undefined) return undefined;
  if (!resolved.includes("://")) {
    const [host, port = "443"] = resolved.split(":");
    const test = (url: URL) =>
      url.protocol === "https:" && url.hostname === host && (url.port || "443") === port;
    return {
      provider,
      entry,
      rank: HOST_RANK_BASE + 1,
      test,
      coversOrigin: test,
      origin: `https://${host}:${port}`,
    };
  }
  let prefix: URL;
  try {
    prefix = new URL(resolved);
  } catch {
    return undefined;
  }
  const origin = originOf(prefix);
  const base = trimSlash(prefix.pathname);
  return {
    provider,
    entry,
    rank: HOST_RANK_BASE + base.length,
    test: (url) =>
      originOf(url) === origin &&
      (base === "/" || url.pathname === base || url.pathname.startsWith(`${base}/`)),
    coversOrigin: (url) => originOf(url) === origin,
    origin,
  };
}

/** The OAuth endpoints of a provider, resolved with `baseUrl` where templated. */
export function oauthEndpoints(provider: RoutableProvider, baseUrl?: string): string[] {
  const oauth = provider.oauth;
  if (!oauth) return [];
  const resolvedBase = baseUrl ?? oauth.base_url;
  const endpoints: string[] = [];
  for (const field of OAUTH_URL_FIELDS) {
    if (field === "issuer") continue;
    const value = oauth[field];
    const resolved = value && expandBaseUrl(value, resolvedBase);
    if (resolved) endpoints.push(resolved);
  }
  return endpoints;
}

export interface RouteTableInput {
  provider: RoutableProvider;
  /** Base URLs for `{base_url}` entries (a connection's, the provider's default); may be empty. */
  baseUrls?: readonly string[];
  /** OAuth endpoint URLs known already resolved (the daemon's routing table lists them). */
  oauthEndpoints?: readonly string[];
}

/**
 * A compiled, immutable routing table. Build once per provider set; match many times (the proxy and
 * the daemon match every request), so host and prefix entries are indexed by origin.
 */
export class RouteTable {
  readonly #entries: CompiledEntry[] = [];
  readonly #byOrigin = new Map<string, CompiledEntry[]>();
  readonly #regexes: CompiledEntry[] = [];
  /** `origin + path` of every OAuth endpoint. */
  readonly #protected = new Set<string>();

  constructor(inputs: Iterable<RouteTableInput>) {
    for (const { provider, baseUrls = [], oauthEndpoints: listed = [] } of inputs) {
      for (const endpoint of listed) this.#protect(endpoint);
      const bases = [
        ...new Set([...baseUrls, ...(provider.oauth?.base_url ? [provider.oauth.base_url] : [])]),
      ];
      const entries = providerApiUrls(provider);
      const seen = new Set<string>();
      for (const base of bases.length > 0 ? bases : [undefined]) {
        for (const entry of entries) {
          const compiled = compileEntry(provider.name, entry, base);
          const key = `${compiled?.entry}|${expandBaseUrl(entry, base)}`;
          if (!compiled || seen.has(key)) continue;
          seen.add(key);
          this.#add(compiled);
        }
        for (const endpoint of oauthEndpoints(provider, base)) this.#protect(endpoint);
      }
    }
  }

  #add(entry: CompiledEntry): void {
    this.#entries.push(entry);
    if (entry.origin === undefined) {
      this.#regexes.push(entry);
      return;
    }
    const sameOrigin = this.#byOrigin.get(entry.origin);
    if (sameOrigin) sameOrigin.push(entry);
    else this.#byOrigin.set(entry.origin, [entry]);
  }

  #protect(endpoint: string): void {
    try {
      const url = new URL(endpoint);
      this.#protected.add(`${originOf(url)}${trimSlash(url.pathname)}`);
    } catch {
      // Validated by the schema; an unparsable endpoint cannot be requested either.
    }
  }

  /** Whether the URL is one of any provider's OAuth endpoints (never injected). */
  isOAuthEndpoint(url: URL): boolean {
    return this.#protected.has(`${originOf(url)}${trimSlash(url.pathname)}`);
  }

  /**
   * Whether any request to `https://hostname:port` could be routed to a provider: the proxy
   * intercepts exactly these hosts and tunnels every other one untouched.
   */
  routesHost(hostname: string, port = 443): boolean {
    let origin: URL;
    try {
      origin = new URL(`https://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}/`);
    } catch {
      return false;
    }
    return this.#entries.some((entry) => entry.coversOrigin(origin));
  }

  /** Every provider whose entries match, best rank first, one candidate per provider. */
  candidates(url: URL): RouteCandidate[] {
    const best = new Map<string, RouteCandidate>();
    // Each group keeps the entries' order, and a regex never ties with a host or prefix entry, so
    // this picks what one pass over every entry would.
    for (const group of [this.#byOrigin.get(originOf(url)), this.#regexes]) {
      for (const entry of group ?? []) {
        if (!entry.test(url)) continue;
        const current = best.get(entry.provider);
        if (!current || entry.rank > current.rank) {
          best.set(entry.provider, { provider: entry.provider, entry: entry.entry, rank: entry.rank });
        }
      }
    }
    return [...best.values()].sort((a, b) => b.rank - a.rank || (a.provider < b.provider ? -1 : 1));
  }
}

export type RouteDecision =
  | { kind: "match"; provider: string; entry: string }
  | { kind: "oauth_endpoint" }
  | { kind: "ambiguous"; providers: string[] }
  | { kind: "unconnected"; providers: string[] }
  | { kind: "none" };

/**
 * Picks the provider for a request. Only providers with a connection (`connected`) compete; the
 * best rank wins, and a tie between providers is ambiguous. When matching providers exist but
 * none is connected, they are reported so the caller can say which `svc login` to run.
 */
export function decideRoute(
  table: RouteTable,
  url: URL,
  connected: (provider: string) => boolean,
): RouteDecision {
  if (table.isOAuthEndpoint(url)) return { kind: "oauth_endpoint" };
  const candidates = table.candidates(url);
  if (candidates.length === 0) return { kind: "none" };
  const usable = candidates.filter((candidate) => connected(candidate.provider));
  if (usable.length === 0) return { kind: "unconnected", providers: candidates.map((c) => c.provider) };
  const top = usable[0]!;
  const tied = usable.filter((candidate) => candidate.rank === top.rank);
  if (tied.length > 1) return { kind: "ambiguous", providers: tied.map((c) => c.provider) };
  return { kind: "match", provider: top.provider, entry: top.entry };
}
