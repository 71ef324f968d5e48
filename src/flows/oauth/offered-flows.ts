/**
 * The flows a provider offers once its issuer's metadata is known: the definition's own
 * (`availableFlows`), and those the metadata publishes both the endpoints and the grant for. An
 * issuer that lists no device grant or no registration endpoint offers neither, whatever the
 * definition's flow would suggest.
 */
import { availableFlows, FLOWS, type Flow, type ProviderDefinition } from "../../providers/schema.ts";
import { DEVICE_CODE_GRANT } from "./grants.ts";
import type { AuthServerMetadata } from "./metadata.ts";

/** RFC 8414 §2: a server that names no grant types supports these. */
const DEFAULT_GRANT_TYPES = ["authorization_code", "implicit"];

export function offeredFlows(
  provider: Pick<ProviderDefinition, "flow" | "oauth">,
  metadata: AuthServerMetadata | undefined,
): Flow[] {
  const flows = new Set<Flow>(availableFlows(provider));
  const oauth = provider.oauth;
  if (oauth && metadata) {
    const grants = metadata.grant_types_supported ?? DEFAULT_GRANT_TYPES;
    const token = oauth.token_url ?? metadata.token_endpoint;
    const authorization = oauth.authorization_url ?? metadata.authorization_endpoint;
    if (provider.flow !== "dcr_pkce" && authorization && token && grants.includes("authorization_code")) {
      flows.add("pkce");
    }
    const device = oauth.device_authorization_url ?? metadata.device_authorization_endpoint;
    if (device && token && grants.includes(DEVICE_CODE_GRANT)) flows.add("device_code");
    const registration = oauth.registration_endpoint ?? metadata.registration_endpoint;
    if (registration && !oauth.client_id && grants.includes("authorization_code")) flows.add("dcr_pkce");
  }
  return FLOWS.filter((flow) => flows.has(flow));
}
