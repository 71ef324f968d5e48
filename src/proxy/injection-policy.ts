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
import { DaemonUnavailableError, SvcError } from "../core/errors.ts";
import type { InterceptedRequest, Outcome, ProxyPolicy, RequestPlan } from "./server.ts";
import { signingPlan } from "./signing-plan.ts";

export interface InjectionPolicyOptions {
  client: DaemonClient;
  /** `--connection provider:name`: the connection to use instead of the provider's default. */
  connections?: ReadonlyMap<string, string>;
  /** Answer 403 (with the `svc login` to run) when a matched provider has no connection. */
  denyUnmatched?: boolean;
  audit?: (event: ExternalAuditEvent) => void;
  now?: () => Date;
}

/** The raw secret inside a header value (`Bearer <token>` → `<token>`), to scrub both forms. */
function secretsOf(credential: ResolvedCredential): string[] {
  const value = credential.header_value;
  const space = value.indexOf(" ");
  return space > 0 ? [value, value.slice(space + 1)] : [value];
}

function refusal(status: number, message: string): Extract<RequestPlan, { kind: "respond" }> {
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
  return { ...refusal(statusFor(svcError), message), reason: svcError.errorName };
}

export class InjectionPolicy implements ProxyPolicy {
  readonly #client: DaemonClient;
  readonly #routes: ProviderRoutes;
  readonly #resolver: CredentialResolver;
  readonly #connections: ReadonlyMap<string, string>;
  readonly #denyUnmatched: boolean;
  readonly #audit: InjectionPolicyOptions["audit"];
  readonly #now: () => Date;

  constructor(options: InjectionPolicyOptions) {
    this.#client = options.client;
    this.#routes = new ProviderRoutes(options.client);
    this.#resolver = new CredentialResolver(options.client);
    this.#connections = options.connections ?? new Map();
    this.#denyUnmatched = options.denyUnmatched ?? false;
    this.#audit = options.audit;
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
    const hostPart = isIPv6(request.host) ? `[${request.host}]` : request.host;
    const authority = request.port === 443 ? hostPart : `${hostPart}:${request.port}`;
    const url = new URL(
      request.path.startsWith("/") ? `https://${authority}${request.path}` : "/",
      `https://${authority}`,
    );
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
        if (this.#routes.routes.find((route) => route.provider === provider)?.auth_type === "aws_sigv4") {
          return signingPlan({
            request,
            authority: url.host,
            provider,
            connection,
            sign: (signing) => signRequest(this.#client, signing),
            refuse: (status, message, reason) => ({
              ...refusal(status, message),
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
        return {
          kind: "forward",
          setHeaders: { [credential.header_name]: credential.header_value },
          secrets: secretsOf(credential),
          done: audit(credential.provider, credential.connection, "injected"),
        };
      }
    }
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
