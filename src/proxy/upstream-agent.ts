/**
 * The proxy's client for intercepted requests: undici's keep-alive connection pools, one per
 * upstream origin, dialled where SVC_PROXY_CONNECT_TO says and verified against the host the child
 * asked for. undici's dispatch API costs about half the CPU per request of node:https (no
 * ClientRequest, IncomingMessage or stream per exchange; docs/performance.md).
 */
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import type { Target } from "./server.ts";

type ConnectTo = (host: string, port: number) => Target;

/**
 * Where the proxy connects for the host and port a child asked for (SVC_PROXY_CONNECT_TO applied),
 * and the name its certificate must carry: the asked host, wherever the socket goes (none for an IP).
 */
export function upstreamAddress(
  connectTo: ConnectTo,
  host: string,
  port: number,
): { host: string; port: number; servername: string | undefined } {
  const real = connectTo(host, port);
  return { host: real.host, port: real.port, servername: isIP(host) ? undefined : host };
}

export function upstreamAgent(connectTo: ConnectTo): Agent {
  const connect = buildConnector({ allowH2: false });
  return new Agent({
    connect(options, callback) {
      const asked = options.hostname.replace(/^\[|\]$/g, "");
      const real = upstreamAddress(connectTo, asked, Number(options.port || 443));
      connect(
        { ...options, hostname: real.host, port: String(real.port), servername: real.servername ?? "" },
        callback,
      );
    },
    // Like node:https before it: an answer may take as long as the API takes (a long completion,
    // an idle event stream); the child decides when to give up.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
}
