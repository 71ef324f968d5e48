import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface LoadBalancer {
  /** The one URL the replicas are behind (their public URL). */
  url: string;
  /** Which target served each request, in order (`METHOD path → target`). */
  log: Array<{ method: string; path: string; target: string }>;
  /**
   * Chooses the target of a request: by default round robin over `targets`. A test can steer
   * requests (an OAuth callback to another replica than the one that started the login).
   */
  pick: (incoming: IncomingMessage) => string;
  close(): Promise<void>;
}

/**
 * A small HTTP reverse proxy on 127.0.0.1 in front of several replicas, as Caddy or nginx would
 * be: it forwards `Host` unchanged, appends `X-Forwarded-For`, streams both ways (long polls are
 * not buffered), and answers 502 when the chosen replica does not answer.
 */
export async function startLoadBalancer(targets: string[]): Promise<LoadBalancer> {
  let next = 0;
  const balancer: LoadBalancer = {
    url: "",
    log: [],
    pick: () => targets[next++ % targets.length]!,
    close: async () => {},
  };
  const server: Server = createServer((incoming, outgoing) => {
    const target = new URL(balancer.pick(incoming));
    balancer.log.push({
      method: incoming.method ?? "GET",
      path: incoming.url ?? "/",
      target: target.origin,
    });
    const forwardedFor = [incoming.headers["x-forwarded-for"], incoming.socket.remoteAddress]
      .filter(Boolean)
      .join(", ");
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, "x-forwarded-for": forwardedFor, "x-forwarded-proto": "http" },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    upstream.on("error", () => {
      if (outgoing.headersSent) outgoing.destroy();
      else outgoing.writeHead(502, { "content-type": "text/plain" }).end("replica unreachable");
    });
    incoming.pipe(upstream);
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  balancer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  balancer.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return balancer;
}
