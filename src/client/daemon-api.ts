/**
 * The daemon's read routes for connections and providers, typed: one implementation for the CLI's
 * commands and the library's `connections` and `providers`.
 */
import type { Connection } from "../api/connections.ts";
import { ConnectionNotFoundError } from "../core/errors.ts";
import type { Provider, ProviderSummary } from "../providers/schema.ts";
import type { DaemonClient } from "./daemon-client.ts";

/** A path segment for a daemon route. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}

/** Every connection of the caller's vault (or one provider's), secrets redacted, sorted by provider and name. */
export function listConnections(
  client: DaemonClient,
  options: { provider?: string } = {},
): Promise<Connection[]> {
  const query = options.provider ? `?provider=${segment(options.provider)}` : "";
  return client.get<Connection[]>(`/api/connections${query}`);
}

/**
 * One connection record, the provider's default when `name` is not given. Secrets are redacted
 * unless `reveal` (which the daemon audits). ConnectionNotFoundError when there is none.
 */
export async function getConnection(
  client: DaemonClient,
  provider: string,
  name?: string,
  options: { reveal?: boolean } = {},
): Promise<Connection> {
  let connection = name;
  if (connection === undefined) {
    const connections = await listConnections(client, { provider });
    connection = connections.find((candidate) => candidate.is_default)?.connection;
    if (!connection) {
      throw new ConnectionNotFoundError(
        `${provider} has no connections; add one with \`svc login ${provider}\``,
      );
    }
  }
  const path = `/api/connections/${segment(provider)}/${segment(connection)}`;
  return client.get<Connection>(options.reveal ? `${path}?reveal=true` : path);
}

/** Every bundled and custom provider (name, auth type, flow, source), sorted by name. */
export function listProviders(client: DaemonClient): Promise<ProviderSummary[]> {
  return client.get<ProviderSummary[]>("/api/providers");
}

/** A provider's full definition; ProviderNotFoundError when there is none of that name. */
export function getProvider(client: DaemonClient, name: string): Promise<Provider> {
  return client.get<Provider>(`/api/providers/${segment(name)}`);
}
