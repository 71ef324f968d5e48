/**
 * The proxy under test of bench/proxy-transport.ts, in its own process: svc's proxy transport
 * without a daemon, in the mode BENCH_TRANSPORT names. Prints one JSON line: the proxy URL (with its
 * credential) and the CA bundle the load generator must trust.
 *
 * - `tunnel`: CONNECT tunnelled byte for byte (the child talks TLS to the upstream);
 * - `tls-pipe`: TLS terminated with an svc leaf and re-opened upstream, bytes piped, no HTTP;
 * - `self-answer`: TLS terminated and each request answered by the proxy's HTTP server itself;
 * - `intercept`: svc's ProxyServer forwarding every request with a static header (no resolve).
 */
import http from "node:http";
import type net from "node:net";
import tls from "node:tls";
import { loadOrCreateCa } from "../src/proxy/ca.ts";
import { writeCaBundle } from "../src/proxy/ca-bundle.ts";
import { connectTarget, parseConnectTo } from "../src/proxy/connect-to.ts";
import { LeafCertificates } from "../src/proxy/leaf-certs.ts";
import { ProxyCredential } from "../src/proxy/proxy-credential.ts";
import { ProxyServer } from "../src/proxy/server.ts";

const mode = process.env.BENCH_TRANSPORT ?? "intercept";
const dir = process.env.BENCH_TRANSPORT_DIR;
/** The header `intercept` sets on every request (the parent checks that it arrived). */
const AUTHORIZATION = process.env.BENCH_AUTHORIZATION ?? "Bearer sk-bench-static";
if (!dir) throw new Error("BENCH_TRANSPORT_DIR is required");
const ca = await loadOrCreateCa(dir);
const caBundle = writeCaBundle(ca, dir, process.env);
const rules = parseConnectTo(process.env.SVC_PROXY_CONNECT_TO);
const connectTo = (host: string, port: number) => connectTarget(rules, host, port);
const certificates = new LeafCertificates(ca);

/** A bare CONNECT proxy that hands each tunnel, TLS-terminated, to `serve`. */
async function terminating(serve: (secure: tls.TLSSocket, host: string) => void): Promise<string> {
  const server = http.createServer();
  server.on("connect", async (request: http.IncomingMessage, socket: net.Socket) => {
    const host = (request.url ?? "").replace(/:\d+$/, "");
    const secureContext = await certificates.secureContextFor(host);
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    serve(new tls.TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: ["http/1.1"] }), host);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

async function start(): Promise<string> {
  if (mode === "tls-pipe") {
    return terminating((secure, host) => {
      const real = connectTo(host, 443);
      const upstream = tls.connect({ host: real.host, port: real.port, servername: host });
      secure.pipe(upstream).pipe(secure);
      secure.on("error", () => upstream.destroy());
      upstream.on("error", () => secure.destroy());
    });
  }
  if (mode === "self-answer") {
    const inner = http.createServer((_request, response) => response.end());
    return terminating((secure) => inner.emit("connection", secure));
  }
  const credential = new ProxyCredential();
  const server = new ProxyServer({
    credential,
    certificates,
    connectTo,
    policy: {
      intercept: () => mode === "intercept",
      plan: async () => ({ kind: "forward", setHeaders: { authorization: AUTHORIZATION } }),
      misdirected: () => {},
    },
  });
  return credential.embedIn(await server.listen());
}

if (!["tunnel", "tls-pipe", "self-answer", "intercept"].includes(mode))
  throw new Error(`unknown mode ${mode}`);
const url = await start();
process.stdout.write(`${JSON.stringify({ url, caBundle })}\n`);
