/**
 * The proxy's client for intercepted requests: undici's keep-alive connection pools, one per
 * upstream origin, dialled where SVC_PROXY_CONNECT_TO says and verified against the host the child
 * asked for. undici's dispatch API costs about half the CPU per request of node:https (no
 * ClientRequest, IncomingMessage or stream per exchange; docs/performance.md).
 */
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import type { Target } from "./server.ts";

export function upstreamAgent(connectTo: (host: string, port: number) => Target): Agent {
  const connect = buildConnector({ allowH2: false });
  return new Agent({
    connect(options, callback) {
      const host = options.hostname.replace(/^\[|\]$/g, "");
      const real = connectTo(host, Number(options.port || 443));
      // The certificate is checked for the host the child asked for, wherever the socket goes.
      const servername = isIP(host) ? "" : host;
      connect({ ...options, hostname: real.host, port: String(real.port), servername }, callback);
    },
    // Like node:https before it: an answer may take as long as the API takes (a long completion,
    // an idle event stream); the child decides when to give up.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
}
