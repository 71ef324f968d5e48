import { OperationNotAllowedError } from "../../core/errors.ts";
import { configuredEndpoints, type OAuthEndpoints, withMetadata } from "../../flows/oauth/endpoints.ts";
import { type AuthServerMetadata, discoverMetadata } from "../../flows/oauth/metadata.ts";
import type { Provider } from "../../providers/schema.ts";

/** How long discovered metadata is trusted before it is read again. */
const METADATA_TTL_MS = 10 * 60 * 1000;
const MAX_CACHED_ISSUERS = 256;

type EndpointName = Exclude<keyof OAuthEndpoints, "issuer">;

/**
 * A provider's OAuth endpoints for a tenant: the definition's, with gaps filled from the issuer's
 * RFC 8414 metadata. Metadata is read only when a needed endpoint is missing, and shared (one
 * request per issuer at a time, kept for 10 minutes); a failed read is not kept.
 */
export class OAuthEndpointResolver {
  readonly #metadata = new Map<string, { until: number; value: Promise<AuthServerMetadata> }>();
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

  #discover(issuer: string): Promise<AuthServerMetadata> {
    const now = this.#now().getTime();
    const cached = this.#metadata.get(issuer);
    if (cached && cached.until > now) return cached.value;
    if (this.#metadata.size >= MAX_CACHED_ISSUERS) this.#metadata.clear();
    const value = discoverMetadata(issuer);
    this.#metadata.set(issuer, { until: now + METADATA_TTL_MS, value });
    value.catch(() => {
      if (this.#metadata.get(issuer)?.value === value) this.#metadata.delete(issuer);
    });
    return value;
  }
}
