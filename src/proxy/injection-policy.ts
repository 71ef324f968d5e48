/**
 * The proxy's policy (the one hook that knows about credentials): which hosts to intercept,
 * which provider a request belongs to, and the header to inject, asked of the daemon per request.
 * Requests to OAuth endpoints, unrouted URLs and ambiguous matches are forwarded untouched.
 */
import { isIPv6 } from "node:net";
import type { ExternalAuditEvent } from "../api/audit.ts";
import type { ProxyRoute, ResolvedCredential } from "../api/credentials.ts";
import { signRequest } from "../client/aws-signing.ts";
import { CredentialResolver, resolveRequestFor } from "../client/credential-resolver.ts";
import type { DaemonClient } from "../client/daemon-client.ts";
import { ProviderRoutes } from "../client/provider-routes.ts";
import type { ResolveChannel } from "../client/resolve-channel.ts";
import { DaemonUnavailableError, SvcError } from "../core/errors.ts";
import { PLACEHOLDER } from "./scrub.ts";
import { secretForms } from "./secret-forms.ts";
import type { InterceptedRequest, Outcome, ProxyPolicy, RequestPlan } from "./server.ts";
import { signingPlan } from "./signing-plan.ts";

export interface InjectionPolicyOptions {
  client: DaemonClient;
  /** `--connection provider:name`: the connection to use instead of the provider's default. */
  connections?: ReadonlyMap<string, string>;
  /** Answer 403 (with the `svc login` to run) when a matched provider has no connection. */
  denyUnmatched?: boolean;
  audit?: (event: ExternalAuditEvent) => void;
  /** Told once per provider when a request matches a provider that has no connection. */
  notice?: (message: string) => void;
  /** Where resolves go (plain HTTP without one, or while it cannot be opened). */
  channel?: ResolveChannel;
  now?: () => Date;
}

/**
 * What the child must never see: the header value, and the raw secret inside it (`Bearer <token>`
 * → `<token>`) in every form an upstream might echo it (base64, percent-encoded).
 */
function secretsOf(credential: ResolvedCredential): string[] {
  const value = credential.header_value;
  const space = value.indexOf(" ");
  return [value, ...secretForms(space > 0 ? value.slice(space + 1) : value)];
}

/**
 * Headers other than the credential's own that carry the placeholder: an SDK configured with
 * placeholders may send one beside the injected header (the Anthropic SDK sends
 * `Authorization: Bearer svc-proxy-managed` next to `x-api-key`); the upstream must not see it.
 */
function placeholderHeaders(headers: InterceptedRequest["headers"], credentialHeader: string): string[] {
  const own = credentialHeader.toLowerCase();
  return Object.entries(headers)
    .filter(([name, value]) => name !== own && value !== undefined && String(value).includes(PLACEHOLDER))
    .map(([name]) => name);
}

/** The URL a request inside a tunnel asks for: its CONNECT authority and its origin-form path. */
function requestUrl(request: InterceptedRequest): URL {
  const hostPart = isIPv6(request.host) ? `[${request.host}]` : request.host;
  const authority = request.port === 443 ? hostPart : `${hostPart}:${request.port}`;
  return new URL(
    request.path.startsWith("/") ? `https://${authority}${request.path}` : "/",
    `https://${authority}`,
  );
}

function refusal(status: number, code: string, message: string): Extract<RequestPlan, { kind: "respond" }> {
  return { kind: "respond", failure: { status, code, message } };
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
    // The run's own identity was refused (a revoked agent): the child may no longer use it.
    case "AuthenticationFailedError":
      return 403;
    default:
      return 502;
  }
}

/** The child's answer when the daemon cannot give a credential (or a signature). */
function failure(
  provider: string,
  error: unknown,
): Extract<RequestPlan, { kind: "respond" }> & { reason: string } {
  const svcError = error instanceof SvcError ? error : new DaemonUnavailableError(String(error));
  const message =
    svcError instanceof DaemonUnavailableError
      ? `svc: the credential for ${provider} could not be fetched: ${svcError.message}`
      : `svc: ${svcError.message}`;
  return { ...refusal(statusFor(svcError), svcError.errorName, message), reason: svcError.errorName };
}

export class InjectionPolicy implements ProxyPolicy {
  readonly #client: DaemonClient;
  readonly #routes: ProviderRoutes;
  readonly #resolver: CredentialResolver;
  readonly #connections: ReadonlyMap<string, string>;
  readonly #denyUnmatched: boolean;
  readonly #audit: InjectionPolicyOptions["audit"];
  readonly #notice: InjectionPolicyOptions["notice"];
  readonly #noticed = new Set<string>();
  readonly #now: () => Date;

  constructor(options: InjectionPolicyOptions) {
    this.#client = options.client;
    this.#routes = new ProviderRoutes(options.client);
    this.#resolver = new CredentialResolver(options.client, options.channel);
    this.#connections = options.connections ?? new Map();
    this.#denyUnmatched = options.denyUnmatched ?? false;
    this.#audit = options.audit;
    this.#notice = options.notice;
    this.#now = options.now ?? (() => new Date());
  }

  /** Loads the routing table; call once before serving. */
  load(): Promise<ProxyRoute[]> {
    return this.#routes.load();
  }

  get routes(): readonly ProxyRoute[] {
    return this.#routes.routes;
  }

  intercept(host: string, port: number): boolean {
    return this.#routes.routesHost(host, port);
  }

  async plan(request: InterceptedRequest): Promise<RequestPlan> {
    this.#routes.refreshIfStale();
    const url = requestUrl(request);
    const audit =
      (provider: string | null, connection: string | null, decision: string) => (outcome: Outcome) =>
        this.#record(request, url, provider, connection, decision, outcome);
    const decision = this.#routes.decide(url);
    switch (decision.kind) {
      case "none":
      case "oauth_endpoint":
        return { kind: "forward", done: audit(null, null, decision.kind) };
      case "ambiguous":
        return { kind: "forward", done: audit(null, null, `ambiguous:${decision.providers.join(",")}`) };
      case "unconnected": {
        const provider = decision.providers[0] ?? null;
        this.#noticeUnconnected(decision.providers, url);
        if (!this.#denyUnmatched) return { kind: "forward", done: audit(provider, null, "unconnected") };
        const logins = decision.providers.map((name) => `svc login ${name}`).join("` or `");
        return {
          ...refusal(
            403,
            "ConnectionNotFoundError",
            `svc: ${url.origin}${url.pathname} belongs to ${decision.providers.join(" or ")}, which has no connection; run \`${logins}\``,
          ),
          done: audit(provider, null, "denied"),
        };
      }
      case "match": {
        const provider = decision.provider;
        const connection = this.#connections.get(provider);
        if (this.#routes.routes.find((route) => route.provider === provider)?.auth_type === "aws_sigv4") {
          return signingPlan({
            request,
            authority: url.host,
            provider,
            connection,
            sign: (signing) => signRequest(this.#client, signing),
            refuse: (failure, reason) => ({
              kind: "respond",
              failure,
              done: audit(provider, connection ?? null, reason),
            }),
            failed: (error) => {
              const { reason, ...plan } = failure(provider, error);
              return { ...plan, done: audit(provider, connection ?? null, reason) };
            },
            done: (signedBy, used) => audit(signedBy, used, "signed"),
          });
        }
        let credential: ResolvedCredential;
        try {
          credential = await this.#resolver.resolve(resolveRequestFor(url, provider, connection));
        } catch (raw) {
          const { reason, ...plan } = failure(provider, raw);
          return { ...plan, done: audit(provider, connection ?? null, reason) };
        }
        const removeHeaders = placeholderHeaders(request.headers, credential.header_name);
        return {
          kind: "forward",
          setHeaders: { [credential.header_name]: credential.header_value },
          ...(removeHeaders.length > 0 ? { removeHeaders } : {}),
          secrets: secretsOf(credential),
          done: audit(credential.provider, credential.connection, "injected"),
        };
      }
    }
  }

  /** The first request to an unconnected provider says what to do; later ones stay quiet. */
  #noticeUnconnected(providers: readonly string[], url: URL): void {
    const key = providers.join(",");
    if (!this.#notice || this.#noticed.has(key)) return;
    this.#noticed.add(key);
    const logins = providers.map((name) => `svc login ${name}`).join("` or `");
    const outcome = this.#denyUnmatched ? "refused (--deny-unmatched)" : "sent without a credential";
    this.#notice(
      `${providers.join(" or ")} has no connection: ${url.origin} requests are ${outcome}; run \`${logins}\``,
    );
  }

  misdirected(request: InterceptedRequest, reason: string): void {
    this.#record(request, requestUrl(request), null, null, "misdirected", {
      status: 421,
      error: reason,
      durationMs: 0,
    });
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
