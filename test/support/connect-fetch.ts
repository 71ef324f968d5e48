import https from "node:https";
import { Readable } from "node:stream";
import type { FetchFunction } from "../../src/client/credential-fetch.ts";
import { connectTarget, parseConnectTo } from "../../src/proxy/connect-to.ts";

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A transport for the library's `fetch` option that reaches a real API host name on a local
 * upstream: it connects where `connectTo` (SVC_PROXY_CONNECT_TO syntax) says, with the original
 * name in the Host header and SNI, and trusts `ca`. Node's own fetch offers no such hook without
 * the undici package. Bodies stream both ways; redirects are returned, never followed.
 */
export function connectToFetch(connectTo: string, ca: string): FetchFunction {
  const rules = parseConnectTo(connectTo);
  const agent = new https.Agent({ keepAlive: true, ca });
  return (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const target = connectTarget(rules, url.hostname, Number(url.port || 443));
    return new Promise<Response>((resolve, reject) => {
      const outgoing = https.request(
        {
          host: target.host,
          port: target.port,
          servername: url.hostname,
          method: request.method,
          path: `${url.pathname}${url.search}`,
          headers: { ...Object.fromEntries(request.headers), host: url.host },
          agent,
          signal: request.signal,
        },
        (incoming) => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            for (const item of Array.isArray(value) ? value : [value ?? ""]) headers.append(name, item);
          }
          const status = incoming.statusCode ?? 502;
          const empty = NULL_BODY_STATUSES.has(status) || request.method === "HEAD";
          if (empty) incoming.resume();
          resolve(
            new Response(empty ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), {
              status,
              statusText: incoming.statusMessage ?? "",
              headers,
            }),
          );
        },
      );
      outgoing.on("error", reject);
      if (request.body) Readable.fromWeb(request.body as never).pipe(outgoing);
      else outgoing.end();
    });
  };
}
