/**
 * The daemon's provider-to-URL routing table (`GET /api/proxy/routes`), compiled with the shared
 * route rules (providers/routing.ts): the proxy and the library's `fetch` decide with this one
 * object, so they agree with each other and with the daemon's own resolve.
 */
import type { ProxyRoute, ProxyRoutes } from "../api/credentials.ts";
import { decideRoute, type RouteDecision, RouteTable } from "../providers/routing.ts";
import type { DaemonClient } from "./daemon-client.ts";

/** How long a loaded table is used before it is refreshed (a login during a run shows up). */
export const ROUTES_TTL_MS = 10_000;

function tableOf(routes: readonly ProxyRoute[]): RouteTable {
  return new RouteTable(
    routes.map((route) => ({
      provider: { name: route.provider, api_url: route.api_url.filter((entry) => !entry.startsWith("{")) },
      oauthEndpoints: route.oauth_endpoints,
    })),
  );
}

export class ProviderRoutes {
  readonly #client: DaemonClient;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #routes: ProxyRoute[] = [];
  #table = new RouteTable([]);
  #connected = new Set<string>();
  #outOfScope = new Set<string>();
  #loadedAt: number | undefined;
  #loading: Promise<ProxyRoute[]> | undefined;

  constructor(client: DaemonClient, options: { ttlMs?: number; now?: () => number } = {}) {
    this.#client = client;
    this.#ttlMs = options.ttlMs ?? ROUTES_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Loads the table from the daemon (concurrent calls share one request). */
  load(): Promise<ProxyRoute[]> {
    this.#loading ??= this.#client
      .get<ProxyRoutes>("/api/proxy/routes")
      .then(({ routes }) => {
        this.#routes = routes;
        this.#table = tableOf(routes);
        this.#connected = new Set(
          routes.filter((route) => route.connections.length > 0).map((r) => r.provider),
        );
        this.#outOfScope = new Set(routes.filter((route) => route.allowed === false).map((r) => r.provider));
        this.#loadedAt = this.#now();
        return routes;
      })
      .finally(() => {
        this.#loading = undefined;
      });
    return this.#loading;
  }

  /**
   * Loads the table the first time; afterwards refreshes a stale one in the background and keeps
   * deciding with the last good one (a daemon that went away meanwhile shows up at resolve time).
   */
  async ready(): Promise<void> {
    if (this.#loadedAt === undefined) {
      await this.load();
      return;
    }
    this.refreshIfStale();
  }

  refreshIfStale(): void {
    if (this.#loading || this.#loadedAt === undefined || this.#now() - this.#loadedAt < this.#ttlMs) return;
    this.load().catch(() => undefined);
  }

  get routes(): readonly ProxyRoute[] {
    return this.#routes;
  }

  /** Whether some request to `https://host:port` could get a credential (what the proxy intercepts). */
  routesHost(host: string, port: number): boolean {
    return this.#table.routesHost(host, port);
  }

  /**
   * Which provider's credential belongs on `url`, among the providers the caller is connected to.
   * A provider outside the caller's scope (an agent's) looks unconnected, but is a match: the
   * request must not go out bare as if nobody minded, so the daemon is asked and its refusal
   * (403 naming the scope, audited there) is the answer.
   */
  decide(url: URL): RouteDecision {
    const decision = decideRoute(this.#table, url, (name) => this.#connected.has(name));
    if (decision.kind !== "unconnected") return decision;
    const refused = decision.providers.find((name) => this.#outOfScope.has(name));
    return refused === undefined ? decision : { kind: "match", provider: refused, entry: "" };
  }
}
