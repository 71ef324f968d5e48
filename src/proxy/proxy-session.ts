/**
 * One `svc run`: the proxy with its CA, policy and audit shipping, started around a child.
 * Composes the transport (server.ts) with the credential policy (injection-policy.ts).
 */
import type { ExternalAuditEvent } from "../api/audit.ts";
import type { ProxyRoute } from "../api/credentials.ts";
import type { DaemonClient } from "../client/daemon-client.ts";
import { ResolveChannel } from "../client/resolve-channel.ts";
import { AuditShipper, type ShipmentReport } from "./audit-shipper.ts";
import { loadOrCreateCa } from "./ca.ts";
import { writeCaBundle } from "./ca-bundle.ts";
import { connectTarget, parseConnectTo } from "./connect-to.ts";
import { checkConnectionOverrides } from "./connection-overrides.ts";
import { InjectionPolicy } from "./injection-policy.ts";
import { LeafCertificates } from "./leaf-certs.ts";
import { ProxyCredential } from "./proxy-credential.ts";
import { ProxyServer } from "./server.ts";

export interface ProxySessionOptions {
  client: DaemonClient;
  /** `SVC_HOME/proxy`: the CA and the CA bundle. */
  proxyDir: string;
  env: NodeJS.ProcessEnv;
  connections?: ReadonlyMap<string, string>;
  denyUnmatched?: boolean;
  /** Told once per provider when the child calls a provider that has no connection. */
  notice?: (message: string) => void;
}

export interface ProxySession {
  /** Where the proxy listens, without its credential (safe to log). */
  url: string;
  /** The proxy URL for the child's HTTP(S)_PROXY: with the credential only the child receives. */
  childProxyUrl: string;
  caBundlePath: string;
  /** Environment variables the connected providers declare (they get the placeholder). */
  placeholders: string[];
  /** Settings the child gets unless it has its own: the region of the AWS connection in use. */
  defaults: Record<string, string>;
  /** Stops the proxy and delivers the queued audit events; reports how many were dropped. */
  close(): Promise<ShipmentReport>;
}

/**
 * AWS_REGION (the JavaScript, Go and Java SDKs) and AWS_DEFAULT_REGION (boto3, the AWS CLI): the
 * default region of the first AWS connection in use that has one. A parent that chose a region
 * in either variable keeps its choice, and the other variable stays as it is.
 */
function awsRegion(
  routes: readonly ProxyRoute[],
  chosen: ReadonlyMap<string, string> | undefined,
  env: NodeJS.ProcessEnv,
): Record<string, string> {
  if (env.AWS_REGION || env.AWS_DEFAULT_REGION) return {};
  for (const route of routes) {
    const connection = chosen?.get(route.provider) ?? route.default_connection;
    const region = connection ? route.regions?.[connection] : undefined;
    if (region) return { AWS_REGION: region, AWS_DEFAULT_REGION: region };
  }
  return {};
}

export async function startProxySession(options: ProxySessionOptions): Promise<ProxySession> {
  const rules = parseConnectTo(options.env.SVC_PROXY_CONNECT_TO);
  const ca = await loadOrCreateCa(options.proxyDir);
  const caBundlePath = writeCaBundle(ca, options.proxyDir, options.env);
  const shipper = new AuditShipper({
    send: async (events: ExternalAuditEvent[]) => {
      await options.client.post("/audit/events", { events });
    },
  });
  // One connection to the daemon for every resolve of this run (docs/security.md).
  const channel = new ResolveChannel(options.client);
  const policy = new InjectionPolicy({
    channel,
    client: options.client,
    ...(options.connections ? { connections: options.connections } : {}),
    denyUnmatched: options.denyUnmatched ?? false,
    audit: (event) => shipper.push(event),
    ...(options.notice ? { notice: options.notice } : {}),
  });
  const routes = await policy.load();
  checkConnectionOverrides(routes, options.connections ?? new Map());
  const credential = new ProxyCredential();
  const server = new ProxyServer({
    policy,
    credential,
    certificates: new LeafCertificates(ca),
    connectTo: (host, port) => connectTarget(rules, host, port),
  });
  const url = await server.listen();
  const placeholders = [...new Set(routes.filter((r) => r.connections.length > 0).flatMap((r) => r.env))];
  return {
    url,
    childProxyUrl: credential.embedIn(url),
    caBundlePath,
    placeholders,
    defaults: awsRegion(routes, options.connections, options.env),
    async close() {
      await server.close();
      channel.close();
      return shipper.close();
    },
  };
}
