/**
 * `svc run --connection provider:name`, checked against the routing table before the child starts:
 * a typo would otherwise surface only as a 401 deep inside the child's output, or not at all.
 */
import type { ProxyRoute } from "../api/credentials.ts";
import { ConnectionNotFoundError, ProviderNotFoundError } from "../core/errors.ts";
import { closestMatches } from "../core/suggest.ts";

export function checkConnectionOverrides(
  routes: readonly ProxyRoute[],
  overrides: ReadonlyMap<string, string>,
): void {
  const byProvider = new Map(routes.map((route) => [route.provider, route]));
  for (const [provider, connection] of overrides) {
    const route = byProvider.get(provider);
    if (!route) {
      const close = closestMatches(provider, byProvider.keys());
      const hint = close.length > 0 ? `did you mean ${close.join(", ")}?` : "see `svc provider list`";
      throw new ProviderNotFoundError(`svc knows no provider "${provider}"; ${hint}`);
    }
    if (route.connections.includes(connection)) continue;
    throw new ConnectionNotFoundError(
      route.connections.length === 0
        ? `${provider} has no connection yet: run \`svc login ${provider}\``
        : `${provider} has no connection "${connection}"; its connections: ${route.connections.join(", ")}`,
    );
  }
}
