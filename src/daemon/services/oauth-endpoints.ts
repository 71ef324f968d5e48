import { OperationNotAllowedError } from "../../core/errors.ts";
import { configuredEndpoints, type OAuthEndpoints, withMetadata } from "../../flows/oauth/endpoints.ts";
import { type AuthServerMetadata, discoverMetadata } from "../../flows/oauth/metadata.ts";
import type { Provider } from "../../providers/schema.ts";

/** How long discovered metadata is trusted before it is read again. */
const METADATA_TTL_MS = 10 * 60 * 1000;
const MAX_CACHED_ISSUERS = 256;
const MAX_DISCOVERED_ENDPOINTS = 5 * MAX_CACHED_ISSUERS;

type EndpointName = Exclude<keyof OAuthEndpoints, "issuer">;

/**
 * A provider's OAuth endpoints for a tenant: the definition's, with gaps filled from the issuer's
 * RFC 8414 metadata. Metadata is read only when a needed endpoint is missing, and shared (one
 * request per issuer at a time, kept for 10 minutes); a failed read is not kept.
 */
export class OAuthEndpointResolver {
  readonly #metadata = new Map<string, { until: number; value: Promise<AuthServerMetadata> }>();
  /** Every endpoint any issuer's metadata named: never a place for a credential. */
  readonly #discovered = new Set<string>();
  readonly #now: () => Date;

  constructor(now: () => Date) {
    this.#now = now;
  }

  async resolve(
    provider: Provider,
    baseUrl: string | undefined,
    needed: EndpointName[],
  ): Promise<OAuthEndpoints> {
    if (!provider.oauth) {
      throw new OperationNotAllowedError(`${provider.name} is an ${provider.auth_type} provider, not OAuth`);
    }
    const configured = configuredEndpoints(provider.oauth, baseUrl);
    if (!configured.issuer || needed.every((name) => configured[name])) return configured;
    return withMetadata(configured, await this.#discover(configured.issuer));
  }

  /** The issuer's metadata for a tenant; undefined when the provider names no issuer. */
  async metadata(provider: Provider, baseUrl: string | undefined): Promise<AuthServerMetadata | undefined> {
    const issuer = provider.oauth && configuredEndpoints(provider.oauth, baseUrl).issuer;
    return issuer ? this.#discover(issuer) : undefined;
  }

  /** The endpoints discovered so far (they join the never-inject list). */
  discoveredEndpoints(): string[] {
    return [...this.#discovered];
  }

  /** Changes whenever a newly discovered endpoint is added, so a routing table knows to rebuild. */
  get version(): number {
    return this.#discovered.size;
  }

  #discover(issuer: string): Promise<AuthServerMetadata> {
    const now = this.#now().getTime();
    const cached = this.#metadata.get(issuer);
    if (cached && cached.until > now) return cached.value;
    if (this.#metadata.size >= MAX_CACHED_ISSUERS) this.#metadata.clear();
    const value = discoverMetadata(issuer).then((metadata) => {
      for (const endpoint of [
        metadata.authorization_endpoint,
        metadata.token_endpoint,
        metadata.registration_endpoint,
        metadata.device_authorization_endpoint,
        metadata.revocation_endpoint,
      ]) {
        if (endpoint && this.#discovered.size < MAX_DISCOVERED_ENDPOINTS) this.#discovered.add(endpoint);
      }
      return metadata;
    });
    this.#metadata.set(issuer, { until: now + METADATA_TTL_MS, value });
    value.catch(() => {
      if (this.#metadata.get(issuer)?.value === value) this.#metadata.delete(issuer);
    });
    return value;
  }
}
