/**
 * The proxy's policy (the one hook that knows about credentials): which hosts to intercept,
 * which provider a request belongs to, and the header to inject, asked of the daemon per request.
 * Requests to OAuth endpoints, unrouted URLs and ambiguous matches are forwarded untouched.
 */
import { isIPv6 } from "node:net";
import type { ExternalAuditEvent } from "../api/audit.ts";
import type { ProxyRoute, ProxyRoutes, ResolvedCredential } from "../api/credentials.ts";
import type { DaemonClient } from "../client/daemon-client.ts";
import { DaemonUnavailableError, SvcError } from "../core/errors.ts";
import { decideRoute, RouteTable } from "../providers/routing.ts";
import type { InterceptedRequest, Outcome, ProxyPolicy, RequestPlan } from "./server.ts";

/** How often the routing table is refreshed from the daemon (a login during a run shows up). */
const ROUTES_TTL_MS = 10_000;

export interface InjectionPolicyOptions {
  client: DaemonClient;
  /** `--connection provider:name`: the connection to use instead of the provider's default. */
  connections?: ReadonlyMap<string, string>;
  /** Answer 403 (with the `svc login` to run) when a matched provider has no connection. */
  denyUnmatched?: boolean;
  audit?: (event: ExternalAuditEvent) => void;
  now?: () => Date;
}

function tableOf(routes: readonly ProxyRoute[]): RouteTable {
  return new RouteTable(
    routes.map((route) => ({
      provider: { name: route.provider, api_url: route.api_url.filter((entry) => !entry.startsWith("{")) },
      oauthEndpoints: route.oauth_endpoints,
    })),
  );
}

/** The raw secret inside a header value (`Bearer <token>` → `<token>`), to scrub both forms. */
function secretsOf(credential: ResolvedCredential): string[] {
  const value = credential.header_value;
  const space = value.indexOf(" ");
  return space > 0 ? [value, value.slice(space + 1)] : [value];
}

function refusal(status: number, message: string): RequestPlan {
  return { kind: "respond", status, body: `${JSON.stringify({ error: "svc_proxy", message })}\n` };
}

/** The HTTP status the child sees when a credential cannot be resolved. */
function statusFor(error: SvcError): number {
  switch (error.errorName) {
    case "ConnectionNotFoundError":
    case "CredentialMissingError":
    case "TokenExpiredError":
    case "RefreshFailedError":
      return 401;
    case "OperationNotAllowedError":
      return 403;
    default:
      return 502;
  }
}

export class InjectionPolicy implements ProxyPolicy {
  readonly #client: DaemonClient;
  readonly #connections: ReadonlyMap<string, string>;
  readonly #denyUnmatched: boolean;
  readonly #audit: InjectionPolicyOptions["audit"];
  readonly #now: () => Date;
  #routes: ProxyRoute[] = [];
  #table = new RouteTable([]);
  #connected = new Set<string>();
  #loadedAt = 0;
  #refreshing: Promise<void> | undefined;
  readonly #inFlight = new Map<string, Promise<ResolvedCredential>>();

  constructor(options: InjectionPolicyOptions) {
    this.#client = options.client;
    this.#connections = options.connections ?? new Map();
    this.#denyUnmatched = options.denyUnmatched ?? false;
    this.#audit = options.audit;
    this.#now = options.now ?? (() => new Date());
  }

  /** Loads the routing table; call once before serving. */
  async load(): Promise<ProxyRoute[]> {
    const { routes } = await this.#client.get<ProxyRoutes>("/api/proxy/routes");
    this.#routes = routes;
    this.#table = tableOf(routes);
    this.#connected = new Set(routes.filter((route) => route.connections.length > 0).map((r) => r.provider));
    this.#loadedAt = Date.now();
    return routes;
  }

  get routes(): readonly ProxyRoute[] {
    return this.#routes;
  }

  #refreshIfStale(): void {
    if (this.#refreshing || Date.now() - this.#loadedAt < ROUTES_TTL_MS) return;
    this.#refreshing = this.load()
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => {
        this.#refreshing = undefined;
      });
  }

  intercept(host: string, port: number): boolean {
    return this.#table.routesHost(host, port);
  }

  async plan(request: InterceptedRequest): Promise<RequestPlan> {
    this.#refreshIfStale();
    const hostPart = isIPv6(request.host) ? `[${request.host}]` : request.host;
    const authority = request.port === 443 ? hostPart : `${hostPart}:${request.port}`;
    const url = new URL(
      request.path.startsWith("/") ? `https://${authority}${request.path}` : "/",
      `https://${authority}`,
    );
    const audit =
      (provider: string | null, connection: string | null, decision: string) => (outcome: Outcome) =>
        this.#record(request, url, provider, connection, decision, outcome);
    const decision = decideRoute(this.#table, url, (name) => this.#connected.has(name));
    switch (decision.kind) {
      case "none":
      case "oauth_endpoint":
        return { kind: "forward", done: audit(null, null, decision.kind) };
      case "ambiguous":
        return { kind: "forward", done: audit(null, null, `ambiguous:${decision.providers.join(",")}`) };
      case "unconnected": {
        const provider = decision.providers[0] ?? null;
        if (!this.#denyUnmatched) return { kind: "forward", done: audit(provider, null, "unconnected") };
        const logins = decision.providers.map((name) => `svc login ${name}`).join("` or `");
        return {
          ...refusal(
            403,
            `svc: ${url.origin}${url.pathname} belongs to ${decision.providers.join(" or ")}, which has no connection; run \`${logins}\``,
          ),
          done: audit(provider, null, "denied"),
        };
      }
      case "match": {
        const provider = decision.provider;
        const connection = this.#connections.get(provider);
        let credential: ResolvedCredential;
        try {
          credential = await this.#resolve(authority, url, provider, connection);
        } catch (raw) {
          const error = raw instanceof SvcError ? raw : new DaemonUnavailableError(String(raw));
          const message =
            error instanceof DaemonUnavailableError
              ? `svc: the credential for ${provider} could not be fetched: ${error.message}`
              : `svc: ${error.message}`;
          return {
            ...refusal(statusFor(error), message),
            done: audit(provider, connection ?? null, error.errorName),
          };
        }
        return {
          kind: "forward",
          setHeaders: { [credential.header_name]: credential.header_value },
          secrets: secretsOf(credential),
          done: audit(credential.provider, credential.connection, "injected"),
        };
      }
    }
  }

  /**
   * Asks the daemon for the credential. Requests that arrive while a resolve for the same
   * provider, connection and host is in flight share it: each still gets a value fetched after it
   * arrived, and a burst of N parallel requests costs one round trip instead of N.
   */
  #resolve(authority: string, url: URL, provider: string, connection: string | undefined) {
    const key = `${provider}\u0000${connection ?? ""}\u0000${authority}`;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#client
        .post<ResolvedCredential>(
          "/api/credentials/resolve",
          {
            host: authority,
            path: `${url.pathname}${url.search}`,
            provider,
            ...(connection ? { connection } : {}),
          },
          // Each proxied request is audited already; a debug-log line each would be a file write each.
          { trace: false },
        )
        .finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  #record(
    request: InterceptedRequest,
    url: URL,
    provider: string | null,
    connection: string | null,
    decision: string,
    outcome: Outcome,
  ): void {
    if (!this.#audit) return;
    const status = outcome.status === undefined ? "error" : outcome.status < 400 ? "success" : "failure";
    this.#audit({
      timestamp: new Date(this.#now().getTime() - outcome.durationMs).toISOString(),
      event: "proxy.request",
      status,
      provider,
      connection,
      detail: {
        method: request.method,
        host: request.host,
        // Never the query string: it may carry tokens.
        path: url.pathname.slice(0, 512),
        status_code: outcome.status ?? null,
        duration_ms: outcome.durationMs,
        decision: decision.slice(0, 64),
      },
    });
  }
}
