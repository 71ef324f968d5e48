import type {
  ProxyRoute,
  ResolvedCredential,
  ResolveRequest,
  SignedRequest,
  SignRequest,
} from "../../api/credentials.ts";
import {
  ConnectionNotFoundError,
  InvalidInputError,
  OperationNotAllowedError,
  ProviderNotFoundError,
  TokenExpiredError,
} from "../../core/errors.ts";
import { apiKeyHeader } from "../../flows/api-key.ts";
import { signSigV4 } from "../../flows/aws-sigv4.ts";
import { awsEndpointOf } from "../../providers/aws-endpoint.ts";
import { decideRoute, expandBaseUrl, oauthEndpoints, RouteTable } from "../../providers/routing.ts";
import {
  documentedTokenTypes,
  oauthAuthorization,
  type Provider,
  providerApiUrls,
} from "../../providers/schema.ts";
import type { ScopeGuard } from "./agent-scopes.ts";
import type { ConnectionRecord, ConnectionService, ProviderConnections } from "./connections.ts";
import type { OAuthEndpointResolver } from "./oauth-endpoints.ts";
import type { Actor, OAuthTokenService } from "./oauth-tokens.ts";
import type { ProviderRegistry } from "./provider-registry.ts";

const TABLE_CACHE_SIZE = 32;
/** How long AWS accepts a signature (its allowed clock skew). */
const SIGNATURE_LIFETIME_MS = 15 * 60_000;
/** Set by the signer, never taken from the caller. */
const SIGNER_HEADERS = new Set([
  "authorization",
  "x-amz-date",
  "x-amz-security-token",
  "x-amz-content-sha256",
]);

/** A routing-table entry that claims no URL and only lists discovered OAuth endpoints. */
const DISCOVERED = { name: "(discovered)", api_url: [] as string[] };

function loginHint(providers: string[]): string {
  return providers.map((name) => `\`svc login ${name}\``).join(" or ");
}

/**
 * Credential resolve: which provider and connection a request belongs to, and the header value
 * to inject. The one way a secret leaves the daemon (besides an explicit, audited reveal).
 */
export class CredentialService {
  readonly #registry: ProviderRegistry;
  readonly #connections: ConnectionService;
  readonly #tokens: OAuthTokenService;
  readonly #endpoints: OAuthEndpointResolver;
  readonly #now: () => Date;
  readonly #tables = new Map<string, RouteTable>();
  /** The providers whose endpoints only their issuer's metadata names, for a registry version. */
  #discoverable: { version: number; providers: Provider[] } | undefined;

  constructor(
    registry: ProviderRegistry,
    connections: ConnectionService,
    tokens: OAuthTokenService,
    endpoints: OAuthEndpointResolver,
    now: () => Date,
  ) {
    this.#registry = registry;
    this.#connections = connections;
    this.#tokens = tokens;
    this.#endpoints = endpoints;
    this.#now = now;
  }

  /** The compiled routing table for a vault's connections (compiled once per provider set and base URLs). */
  #table(index: Map<string, ProviderConnections>): RouteTable {
    const bases = [...index]
      .filter(([, entry]) => entry.baseUrls.length > 0)
      .map(([name, entry]) => `${name}=${entry.baseUrls.join(",")}`)
      .join(";");
    const key = `${this.#registry.version}|${this.#endpoints.version}|${bases}`;
    let table = this.#tables.get(key);
    if (!table) {
      table = new RouteTable([
        ...this.#registry
          .list()
          .map((provider) => ({ provider, baseUrls: index.get(provider.name)?.baseUrls ?? [] })),
        // Endpoints only an issuer's metadata names (hosted MCP servers) are never injected either.
        { provider: DISCOVERED, oauthEndpoints: this.#endpoints.discoveredEndpoints() },
      ]);
      if (this.#tables.size >= TABLE_CACHE_SIZE) this.#tables.delete(this.#tables.keys().next().value!);
      this.#tables.set(key, table);
    }
    return table;
  }

  /**
   * `GET /api/proxy/routes`: every provider's routes, OAuth endpoints and the caller's connections
   * (only those in its scope).
   */
  async routes(vaultId: string, guard: ScopeGuard): Promise<ProxyRoute[]> {
    const index = await this.#connections.index(vaultId);
    return this.#registry.list().map((provider) => {
      const connections = guard.view(provider.name, index.get(provider.name));
      const bases = [
        ...(connections?.baseUrls ?? []),
        ...(provider.oauth?.base_url ? [provider.oauth.base_url] : []),
      ];
      const apiUrls = new Set<string>();
      for (const entry of providerApiUrls(provider)) {
        if (!entry.startsWith("{")) apiUrls.add(entry);
        for (const base of bases) {
          const resolved = expandBaseUrl(entry, base);
          if (resolved) apiUrls.add(resolved);
        }
      }
      const endpoints = new Set([...oauthEndpoints(provider), ...this.#discoveredOn(provider)]);
      for (const base of bases)
        for (const endpoint of oauthEndpoints(provider, base)) endpoints.add(endpoint);
      return {
        provider: provider.name,
        auth_type: provider.auth_type,
        api_url: [...apiUrls],
        oauth_endpoints: [...endpoints],
        header_name: provider.api_key?.header_name ?? "Authorization",
        // The SDK variable belongs to the placeholders even when a definition forgot it in `env`.
        env: [
          ...new Set([...provider.env, ...(provider.api_key?.env_var ? [provider.api_key.env_var] : [])]),
        ],
        connections: connections?.names ?? [],
        default_connection: connections?.defaultConnection ?? null,
        ...(provider.auth_type === "aws_sigv4" ? { regions: connections?.regions ?? {} } : {}),
        ...(guard.allows(provider.name) ? {} : { allowed: false }),
      };
    });
  }

  /** The header for a request; an OAuth token about to expire is refreshed first (audited for `actor`). */
  async resolve(
    vaultId: string,
    request: ResolveRequest,
    actor: Actor,
    guard: ScopeGuard,
  ): Promise<ResolvedCredential> {
    const { provider, record } = await this.#connectionFor(vaultId, request, actor, guard);
    return { provider: provider.name, connection: record.connection, ...this.#header(provider, record) };
  }

  /**
   * Signs an AWS request (Signature Version 4) with the connection's secret access key, which never
   * leaves the daemon: the caller sends the request's canonical parts and payload hash, and gets
   * the headers to set.
   */
  async sign(vaultId: string, request: SignRequest, actor: Actor, guard: ScopeGuard): Promise<SignedRequest> {
    const { provider, record } = await this.#connectionFor(vaultId, request, actor, guard);
    const { credential } = record;
    if (provider.auth_type !== "aws_sigv4" || credential.type !== "aws_sigv4") {
      throw new OperationNotAllowedError(
        `${provider.name} is not a request-signing provider; use POST /api/credentials/resolve for its header`,
      );
    }
    const host = request.host.toLowerCase();
    const endpoint = awsEndpointOf(host);
    if (!endpoint) {
      throw new OperationNotAllowedError(
        `${host} is not an AWS endpoint; svc signs only for *.amazonaws.com`,
      );
    }
    if (!/^[0-9a-f]{64}$/.test(request.payload_sha256) && !endpoint.s3) {
      throw new InvalidInputError(
        `${endpoint.service} does not accept ${request.payload_sha256}; send the body's SHA-256`,
      );
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      if (!SIGNER_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
    }
    headers.host = host;
    const now = this.#now();
    const signed = signSigV4(
      {
        method: request.method,
        path: request.path ?? "/",
        query: request.query ?? "",
        headers,
        payloadHash: request.payload_sha256,
      },
      {
        accessKeyId: credential.access_key_id,
        secretAccessKey: credential.secret_access_key,
        sessionToken: credential.session_token,
      },
      {
        service: endpoint.service,
        region: endpoint.region,
        date: now,
        normalizePath: !endpoint.s3,
        signPayloadHeader: endpoint.s3,
      },
    );
    return {
      provider: provider.name,
      connection: record.connection,
      service: endpoint.service,
      region: endpoint.region,
      headers: signed.headers,
      expires_at: new Date(now.getTime() + SIGNATURE_LIFETIME_MS).toISOString(),
    };
  }

  /** The provider and (fresh) connection record a request belongs to. */
  async #connectionFor(
    vaultId: string,
    request: Pick<ResolveRequest, "host" | "path" | "provider" | "connection">,
    actor: Actor,
    guard: ScopeGuard,
  ): Promise<{ provider: Provider; record: ConnectionRecord }> {
    try {
      return await this.#pickConnection(vaultId, request, actor, guard);
    } catch (error) {
      const missing = error instanceof ConnectionNotFoundError || error instanceof ProviderNotFoundError;
      if (!missing || !(this.#connections.mayBeStale || this.#registry.mayBeStale)) throw error;
      // Another replica may have added it a moment ago, before its notice arrived: ask the store.
      await this.#registry.load();
      this.#connections.dropIndex(vaultId);
      return this.#pickConnection(vaultId, request, actor, guard);
    }
  }

  async #pickConnection(
    vaultId: string,
    request: Pick<ResolveRequest, "host" | "path" | "provider" | "connection">,
    actor: Actor,
    guard: ScopeGuard,
  ): Promise<{ provider: Provider; record: ConnectionRecord }> {
    const index = await this.#connections.index(vaultId);
    const url = request.host === undefined ? undefined : requestUrl(request.host, request.path ?? "/");
    if (url) await this.#discoverIssuerOf(index, url);
    let provider: Provider;
    if (request.provider !== undefined) {
      provider = this.#registry.get(request.provider);
      if (url) this.#assertRoutes(index, provider, url);
    } else {
      if (!url) throw new InvalidInputError("resolve needs a host, or a provider");
      provider = this.#registry.get(this.#pick(index, url));
    }
    // The scope decides before the store is read: a refused request learns nothing of the vault.
    const name = await guard.chooseConnection(provider.name, request.connection, index.get(provider.name));
    if (!name) {
      throw new ConnectionNotFoundError(`no ${provider.name} connection; run ${loginHint([provider.name])}`);
    }
    const stored = await this.#connections.get(vaultId, provider.name, name);
    return { provider, record: await this.#tokens.fresh(vaultId, provider, stored, actor) };
  }

  /**
   * A request to the origin of a connected provider's issuer may be one of the endpoints only its
   * metadata names (an MCP server's /token and /register): read the metadata first (cached), so
   * the table knows them. Unreachable metadata refuses the request rather than guess.
   */
  async #discoverIssuerOf(index: Map<string, ProviderConnections>, url: URL): Promise<void> {
    for (const provider of this.#discoverableProviders()) {
      const issuer = provider.oauth?.issuer;
      if (!issuer || !index.has(provider.name)) continue;
      for (const base of [...(index.get(provider.name)?.baseUrls ?? []), undefined]) {
        const resolved = expandBaseUrl(issuer, base ?? provider.oauth?.base_url);
        if (!resolved || new URL(resolved).origin !== url.origin) continue;
        try {
          await this.#endpoints.metadata(provider, base);
        } catch {
          throw new OperationNotAllowedError(
            `${url.origin} is ${provider.name}'s authorization server and its metadata could not be read; svc sends no credential there until it can tell the OAuth endpoints apart`,
          );
        }
      }
    }
  }

  /** Providers with an issuer and no token endpoint of their own, listed once per registry version. */
  #discoverableProviders(): Provider[] {
    const version = this.#registry.version;
    if (this.#discoverable?.version !== version) {
      // A definition that names its token endpoint has its endpoints protected already.
      const providers = this.#registry.list().filter((p) => p.oauth?.issuer && !p.oauth.token_url);
      this.#discoverable = { version, providers };
    }
    return this.#discoverable.providers;
  }

  /** The discovered endpoints on a provider's issuer origin (for the proxy's route list). */
  #discoveredOn(provider: Provider): string[] {
    const issuer = provider.oauth?.issuer;
    if (!issuer || issuer.startsWith("{")) return [];
    const origin = new URL(issuer).origin;
    return this.#endpoints.discoveredEndpoints().filter((endpoint) => new URL(endpoint).origin === origin);
  }

  #pick(index: Map<string, ProviderConnections>, url: URL): string {
    const decision = decideRoute(this.#table(index), url, (name) => index.has(name));
    const where = `${url.origin}${url.pathname}`;
    switch (decision.kind) {
      case "match":
        return decision.provider;
      case "oauth_endpoint":
        throw new OperationNotAllowedError(
          `${where} is a provider's OAuth endpoint; svc never sends credentials there`,
        );
      case "ambiguous":
        throw new OperationNotAllowedError(
          `${where} matches ${decision.providers.join(" and ")} equally; name the provider to use`,
        );
      case "unconnected":
        throw new ConnectionNotFoundError(
          `${where} belongs to ${decision.providers.join(" or ")}, ${decision.providers.length === 1 ? "which has no" : "none of which has a"} connection; run ${loginHint(decision.providers)}`,
        );
      case "none":
        throw new ProviderNotFoundError(
          `no provider routes ${where}; see \`svc provider list\`, or register one with \`svc provider register <file>\``,
        );
    }
  }

  /** A named provider must still own the URL: a credential never goes to another host. */
  #assertRoutes(index: Map<string, ProviderConnections>, provider: Provider, url: URL): void {
    const table = this.#table(index);
    const where = `${url.origin}${url.pathname}`;
    if (table.isOAuthEndpoint(url)) {
      throw new OperationNotAllowedError(
        `${where} is a provider's OAuth endpoint; svc never sends credentials there`,
      );
    }
    if (!table.candidates(url).some((candidate) => candidate.provider === provider.name)) {
      throw new OperationNotAllowedError(
        `${where} is not an API URL of ${provider.name}; its credential is not sent there`,
      );
    }
  }

  #header(provider: Provider, record: ConnectionRecord): Omit<ResolvedCredential, "provider" | "connection"> {
    const { credential } = record;
    if (credential.type === "api_key") {
      if (!provider.api_key) {
        throw new OperationNotAllowedError(
          `${provider.name} is now an ${provider.auth_type} provider but the connection holds an API key; log in again`,
        );
      }
      const header = apiKeyHeader(provider.api_key, credential.api_key);
      return { header_name: header.name, header_value: header.value, expires_at: null };
    }
    if (credential.type === "aws_sigv4") {
      throw new OperationNotAllowedError(
        `${provider.name} signs each request with the secret access key, so there is no header to hand out; send the request through \`svc run\` or the library's fetch (POST /api/credentials/sign)`,
      );
    }
    const expiresAt = credential.expires_at ?? null;
    if (expiresAt && Date.parse(expiresAt) <= this.#now().getTime()) {
      throw new TokenExpiredError(
        `the ${provider.name} access token of "${record.connection}" expired at ${expiresAt}; run ${loginHint([provider.name])} --force`,
      );
    }
    // Sent only in a form the provider documents for this token type; anything else would be refused.
    const value = oauthAuthorization(provider.oauth, credential.token_type, credential.access_token);
    if (value === undefined) {
      throw new OperationNotAllowedError(
        `the ${provider.name} token of "${record.connection}" has token type "${credential.token_type}", which ${provider.name} does not document (${documentedTokenTypes(provider.oauth).join(", ")}); run ${loginHint([provider.name])} --force`,
      );
    }
    return { header_name: "Authorization", header_value: value, expires_at: expiresAt };
  }
}

/** The https URL of a resolve request; refuses hosts and paths that are not plain. */
function requestUrl(host: string, path: string): URL {
  if (!path.startsWith("/")) throw new InvalidInputError('path must start with "/"');
  if (/[\s/@?#\\]/.test(host)) throw new InvalidInputError(`"${host}" is not a host (name[:port])`);
  try {
    return new URL(`https://${host.toLowerCase()}${path}`);
  } catch {
    throw new InvalidInputError(`"${host}${path}" is not a valid host and path`);
  }
}
