/**
 * Pins each request inside an intercepted tunnel to the tunnel's CONNECT authority. The credential
 * is chosen for the CONNECT host, so a request that names another host (a different `Host`, two
 * `Host` headers, or an absolute-form target) must not be forwarded with it: it is misdirected
 * (RFC 9110 section 15.5.20).
 */

export interface Authority {
  host: string;
  port: number;
}

export type PinnedTarget = { path: string } | { misdirected: string };

const DEFAULT_PORTS: Record<string, number> = { "https:": 443, "http:": 80 };

/**
 * `host[:port]` or `[v6]:port` in canonical form: lower case, no trailing dot, the port explicit.
 * Undefined when it is not an authority.
 */
export function parseAuthority(authority: string, defaultPort: number): Authority | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/.exec(authority.trim());
  if (!match) return undefined;
  const port = match[3] ? Number(match[3]) : defaultPort;
  if (port < 1 || port > 65_535) return undefined;
  const host = (match[1] ?? match[2]!).toLowerCase().replace(/\.$/, "");
  return host === "" ? undefined : { host, port };
}

function sameAuthority(a: Authority, b: Authority): boolean {
  return a.host === b.host && a.port === b.port;
}

/** The Host header values as sent (Node keeps only the first in `headers`). */
function hostHeaders(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === "host") values.push(rawHeaders[i + 1]!);
  }
  return values;
}

/**
 * The origin-form path to forward for a request received inside a tunnel to `target`, or why it
 * is misdirected. An absolute-form target naming the same authority is accepted and reduced to
 * its path.
 */
export function pinRequestTarget(
  requestTarget: string,
  rawHeaders: readonly string[],
  target: Authority,
): PinnedTarget {
  const hosts = hostHeaders(rawHeaders);
  if (hosts.length !== 1) return { misdirected: `expected one Host header, got ${hosts.length}` };
  const host = parseAuthority(hosts[0]!, 443);
  const expected = { host: target.host.replace(/\.$/, ""), port: target.port };
  if (!host || !sameAuthority(host, expected)) return { misdirected: "the Host header names another host" };
  if (requestTarget.startsWith("/") || requestTarget === "*") return { path: requestTarget };
  let url: URL;
  try {
    url = new URL(requestTarget);
  } catch {
    return { misdirected: "the request target is neither a path nor an absolute URL" };
  }
  const defaultPort = DEFAULT_PORTS[url.protocol];
  const named = defaultPort ? parseAuthority(url.host, defaultPort) : undefined;
  if (!named || url.username || url.password || !sameAuthority(named, expected))
    return { misdirected: "the absolute-form target names another host" };
  return { path: `${url.pathname}${url.search}` };
}
