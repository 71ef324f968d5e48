/**
 * The proxy's transport: an HTTP proxy on 127.0.0.1 that tunnels CONNECT byte for byte, or, for
 * the hosts the policy claims, terminates TLS with a leaf of the svc CA and forwards each request
 * upstream over verified TLS with keep-alive, streaming both ways. It knows nothing of providers or
 * credentials: the policy says what to intercept and which headers to set (mitmproxy's addon model).
 */
import http from "node:http";
import net from "node:net";
import type { Readable } from "node:stream";
import tls from "node:tls";
import type { Agent, Dispatcher } from "undici";
import { monotonicMs } from "../core/clock.ts";
import { hashBodyUpTo, noBody } from "./body-buffer.ts";
import { forwardableHeaders, headersForChild } from "./headers.ts";
import { PROXY_AUTHENTICATE, type ProxyCredential } from "./proxy-credential.ts";
import { type ProxyFailure, rawProxyError, upstreamFailure, writeProxyError } from "./proxy-errors.ts";
import { pump } from "./pump.ts";
import { parseAuthority, pinRequestTarget } from "./request-target.ts";
import { ResponseRelay } from "./response-relay.ts";
import { UpgradeResponseScrubber } from "./upgrade-scrub.ts";
import { upstreamAddress, upstreamAgent } from "./upstream-agent.ts";

export interface Target {
  host: string;
  port: number;
}

export interface InterceptedRequest {
  method: string;
  /** The host the client asked for (CONNECT target), lower case. */
  host: string;
  port: number;
  /** Path and query as the client sent them. */
  path: string;
  headers: http.IncomingHttpHeaders;
}

export interface Outcome {
  /** Upstream status, or the status the proxy answered itself. */
  status?: number;
  /** Why no upstream answer arrived. */
  error?: string;
  durationMs: number;
}

export type RequestPlan =
  | {
      kind: "forward";
      /** Headers to set, replacing any the client sent under the same name. */
      setHeaders?: Record<string, string>;
      /**
       * Headers the client sent that must not go upstream (lower case): a placeholder beside the
       * injected header, a signature made with placeholder keys.
       */
      removeHeaders?: readonly string[];
      /** Values the client must never see: replaced in response headers and bodies. */
      secrets?: readonly string[];
      done?: (outcome: Outcome) => void;
    }
  | { kind: "respond"; failure: ProxyFailure; done?: (outcome: Outcome) => void }
  | {
      /** The plan depends on the body (a request signature covers it): hash it first. */
      kind: "hash-body";
      /** Bodies longer than this are not held in memory, and get no hash. */
      limit: number;
      /** The plan, given the body's hex SHA-256 (undefined when longer than `limit`). */
      withHash: (sha256: string | undefined) => Promise<Exclude<RequestPlan, { kind: "hash-body" }>>;
    };

type SettledPlan = Exclude<RequestPlan, { kind: "hash-body" }>;

export interface ProxyPolicy {
  /** Whether CONNECTs to this host are intercepted (else tunnelled untouched). */
  intercept(host: string, port: number): boolean;
  /** What to do with one intercepted request (or WebSocket handshake). */
  plan(request: InterceptedRequest): Promise<RequestPlan>;
  /** A request inside a tunnel named another host than its CONNECT: answered 421, never forwarded. */
  misdirected(request: InterceptedRequest, reason: string): void;
}

export interface CertificateSource {
  secureContextFor(servername: string): Promise<tls.SecureContext>;
}

export interface ProxyServerOptions {
  policy: ProxyPolicy;
  /** What CONNECT and absolute-form requests must carry in Proxy-Authorization (407 otherwise). */
  credential: ProxyCredential;
  certificates: CertificateSource;
  /** Where to really connect for a host and port (SVC_PROXY_CONNECT_TO); identity by default. */
  connectTo?: (host: string, port: number) => Target;
}

/** What a request carrying a secret may accept: encodings the scrubber can decode. */
const SCRUBBABLE_ENCODINGS = "gzip, deflate, br";

/** A request with no body to forward (no length, or zero, and not chunked). */
function bodiless(request: http.IncomingMessage): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] === undefined && (length === undefined || length === "0");
}

const PROXY_AUTH_REQUIRED: ProxyFailure = {
  status: 407,
  code: "ProxyAuthenticationRequired",
  message: "svc proxy: this proxy serves only the command svc run started (Proxy-Authorization)",
};

export class ProxyServer {
  readonly #policy: ProxyPolicy;
  readonly #credential: ProxyCredential;
  readonly #certificates: CertificateSource;
  readonly #connectTo: (host: string, port: number) => Target;
  readonly #outer: http.Server;
  /** Serves the decrypted side of intercepted CONNECTs. */
  readonly #inner: http.Server;
  readonly #targets = new WeakMap<net.Socket, Target>();
  readonly #sockets = new Set<net.Socket>();
  /** Keep-alive connections to the upstreams of intercepted requests. */
  readonly #upstream: Agent;

  constructor(options: ProxyServerOptions) {
    this.#policy = options.policy;
    this.#credential = options.credential;
    this.#certificates = options.certificates;
    this.#connectTo = options.connectTo ?? ((host, port) => ({ host, port }));
    this.#upstream = upstreamAgent(this.#connectTo);
    this.#outer = http.createServer((request, response) => this.#plainHttp(request, response));
    this.#outer.on("connect", (request, socket, head) => {
      // The server stops watching a CONNECT's socket: a client resetting it must not crash svc run.
      socket.on("error", () => socket.destroy());
      this.#connect(request, socket as net.Socket, head).catch(() => socket.destroy());
    });
    this.#outer.on("connection", (socket: net.Socket) => this.#track(socket));
    this.#inner = http.createServer((request, response) => {
      this.#intercepted(request, response).catch(() => response.destroy());
    });
    this.#inner.on("upgrade", (request, socket, head) => {
      this.#upgrade(request, socket as net.Socket, head).catch(() => socket.destroy());
    });
    // Idle keep-alive connections from the child are its business; never time them out early.
    this.#inner.keepAliveTimeout = 60_000;
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.once("close", () => this.#sockets.delete(socket));
  }

  /** Listens on 127.0.0.1 (an ephemeral port unless given); returns the proxy URL. */
  listen(port = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#outer.once("error", reject);
      this.#outer.listen(port, "127.0.0.1", () => {
        this.#outer.off("error", reject);
        const address = this.#outer.address() as net.AddressInfo;
        resolve(`http://127.0.0.1:${address.port}`);
      });
    });
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#outer.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    this.#inner.close();
    await this.#upstream.destroy();
    await closed;
  }

  async #connect(request: http.IncomingMessage, socket: net.Socket, head: Buffer): Promise<void> {
    if (!this.#credential.accepts(request.headers["proxy-authorization"])) {
      socket.end(rawProxyError(PROXY_AUTH_REQUIRED, [`proxy-authenticate: ${PROXY_AUTHENTICATE}`]));
      return;
    }
    const target = parseAuthority(request.url ?? "", 443);
    if (!target) {
      socket.end("HTTP/1.1 400 Bad Request\r\n\r\n");
      return;
    }
    if (!this.#policy.intercept(target.host, target.port)) {
      this.#tunnel(socket, target, head);
      return;
    }
    const secureContext = await this.#certificates.secureContextFor(target.host);
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) socket.unshift(head);
    const secure = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext,
      ALPNProtocols: ["http/1.1"],
      SNICallback: (servername, callback) => {
        this.#certificates.secureContextFor(servername.toLowerCase()).then(
          (context) => callback(null, context),
          (error: Error) => callback(error, undefined),
        );
      },
    });
    secure.on("error", () => secure.destroy());
    this.#targets.set(secure, target);
    this.#track(secure);
    this.#inner.emit("connection", secure);
  }

  /** Not intercepted: a byte-for-byte TCP tunnel; the child sees the upstream's own certificate. */
  #tunnel(socket: net.Socket, target: Target, head: Buffer): void {
    const real = this.#connectTo(target.host, target.port);
    const upstream = net.connect(real.port, real.host);
    let established = false;
    upstream.once("connect", () => {
      established = true;
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    upstream.on("error", () => {
      if (!established) socket.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
      else socket.destroy();
    });
    socket.on("error", () => upstream.destroy());
    socket.once("close", () => upstream.destroy());
    upstream.once("close", () => socket.destroy());
  }

  /** The request as the policy sees it, pinned to its tunnel's CONNECT authority. */
  #describe(request: http.IncomingMessage): { described: InterceptedRequest; misdirected?: string } {
    const target = this.#targets.get(request.socket as net.Socket);
    if (!target) throw new Error("intercepted request without a CONNECT target");
    const pinned = pinRequestTarget(request.url ?? "/", request.rawHeaders, target);
    const described = {
      method: request.method ?? "GET",
      host: target.host,
      port: target.port,
      path: "path" in pinned ? pinned.path : "/",
      headers: request.headers,
    };
    return "misdirected" in pinned ? { described, misdirected: pinned.misdirected } : { described };
  }

  /**
   * Describes an intercepted request, asks the policy (hashing the body first when the plan needs
   * it), and times it for the plan's `done`. `body` is what to send upstream. A misdirected request
   * is answered 421 without asking the policy for a credential.
   */
  async #plan(
    request: http.IncomingMessage,
    upgrade = false,
  ): Promise<{
    described: InterceptedRequest;
    plan: SettledPlan;
    body: Readable;
    finish: (outcome: Omit<Outcome, "durationMs">) => void;
  }> {
    const started = monotonicMs();
    const { described, misdirected } = this.#describe(request);
    let plan: SettledPlan;
    let body: Readable = request;
    if (misdirected !== undefined) {
      this.#policy.misdirected(described, misdirected);
      plan = {
        kind: "respond",
        failure: {
          status: 421,
          code: "MisdirectedRequest",
          message: `svc proxy: this connection was opened for ${described.host}:${described.port}; ${misdirected}`,
        },
      };
    } else {
      const first = await this.#policy.plan(described);
      if (first.kind === "hash-body") {
        // An upgrade's handshake has no body (what follows it is the new protocol's).
        const hashed = upgrade ? noBody(request) : await hashBodyUpTo(request, first.limit);
        body = hashed.body;
        plan = await first.withHash(hashed.sha256);
      } else plan = first;
    }
    let reported = false;
    // Once per request, whichever failure (upstream, client, body) is noticed first.
    const finish = (outcome: Omit<Outcome, "durationMs">) => {
      if (reported) return;
      reported = true;
      plan.done?.({ ...outcome, durationMs: Math.round(monotonicMs() - started) });
    };
    return { described, plan, body, finish };
  }

  async #intercepted(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const { described, plan, body: requestBody, finish } = await this.#plan(request);
    if (plan.kind === "respond") {
      requestBody.resume();
      writeProxyError(response, plan.failure);
      finish({ status: plan.failure.status });
      return;
    }
    const headers = forwardableHeaders(request.headers, {
      setHeaders: {
        ...(plan.secrets?.length && request.headers["accept-encoding"]
          ? { "accept-encoding": SCRUBBABLE_ENCODINGS }
          : {}),
        ...plan.setHeaders,
      },
      // The proxy's server has answered the child's 100-continue itself.
      removeHeaders: ["expect", ...(plan.removeHeaders ?? [])],
    });
    // Nothing to stream for a request without a body: no piping, no listeners.
    const body = requestBody === request && bodiless(request) ? null : requestBody;
    if (body === null) request.resume();
    const authority = net.isIPv6(described.host) ? `[${described.host}]` : described.host;
    this.#upstream.dispatch(
      {
        origin: `https://${authority}:${described.port}`,
        path: described.path,
        method: described.method as Dispatcher.HttpMethod,
        headers: headers as Record<string, string | string[]>,
        body,
      },
      new ResponseRelay({
        response,
        method: described.method,
        host: described.host,
        port: described.port,
        secrets: plan.secrets ?? [],
        finish,
      }),
    );
  }

  /** A WebSocket (or other) upgrade: the handshake gets the planned headers, then bytes flow both ways. */
  async #upgrade(request: http.IncomingMessage, socket: net.Socket, head: Buffer): Promise<void> {
    const { described, plan, finish } = await this.#plan(request, true);
    if (plan.kind === "respond") {
      socket.end(rawProxyError(plan.failure));
      finish({ status: plan.failure.status });
      return;
    }
    const upstream = tls.connect({
      ...upstreamAddress(this.#connectTo, described.host, described.port),
      ALPNProtocols: ["http/1.1"],
    });
    const headers: Record<string, string | string[]> = {};
    const removed = new Set(["proxy-authorization", "proxy-connection", ...(plan.removeHeaders ?? [])]);
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !removed.has(name)) headers[name] = value;
    }
    for (const [name, value] of Object.entries(plan.setHeaders ?? {})) headers[name.toLowerCase()] = value;
    const secrets = plan.secrets ?? [];
    // Frames are scrubbed as literal bytes: no compression extension may be negotiated.
    if (secrets.length > 0) delete headers["sec-websocket-extensions"];
    let connected = false;
    upstream.once("secureConnect", () => {
      connected = true;
      const lines = [`${described.method} ${described.path} HTTP/1.1`];
      for (const [name, value] of Object.entries(headers)) {
        for (const item of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${item}`);
      }
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      if (secrets.length > 0) {
        const scrubber = new UpgradeResponseScrubber(secrets);
        scrubber.on("error", () => {
          socket.destroy();
          upstream.destroy();
        });
        upstream.pipe(scrubber).pipe(socket);
      } else upstream.pipe(socket);
      socket.pipe(upstream);
      finish({ status: 101 });
    });
    upstream.on("error", (error) => {
      if (!connected) {
        socket.end(rawProxyError(upstreamFailure(described.host, described.port, error)));
        finish({ status: 502, error: error.message });
      } else socket.destroy();
    });
    socket.on("error", () => upstream.destroy());
    socket.once("close", () => upstream.destroy());
  }

  /** Plain-HTTP proxy requests are forwarded untouched: credentials never go over plain HTTP. */
  #plainHttp(request: http.IncomingMessage, response: http.ServerResponse): void {
    if (!this.#credential.accepts(request.headers["proxy-authorization"])) {
      request.resume();
      writeProxyError(response, PROXY_AUTH_REQUIRED, {
        "proxy-authenticate": PROXY_AUTHENTICATE,
        connection: "close",
      });
      return;
    }
    let url: URL;
    try {
      url = new URL(request.url ?? "");
    } catch {
      writeProxyError(response, {
        status: 400,
        code: "InvalidInputError",
        message: "svc proxy: expected an absolute http:// URL",
      });
      return;
    }
    if (url.protocol !== "http:") {
      writeProxyError(response, {
        status: 400,
        code: "InvalidInputError",
        message: "svc proxy: only http:// URLs are proxied directly; use CONNECT for https",
      });
      return;
    }
    const real = this.#connectTo(url.hostname.replace(/^\[|\]$/g, ""), Number(url.port || 80));
    const upstream = http.request({
      host: real.host,
      port: real.port,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers: forwardableHeaders(request.headers),
    });
    upstream.on("response", (upstreamResponse) => {
      const headers = headersForChild(upstreamResponse.headers, []);
      response.writeHead(upstreamResponse.statusCode ?? 502, headers);
      pump(upstreamResponse, response, () => {});
    });
    upstream.on("error", (error) => {
      if (response.headersSent) response.destroy(error);
      else {
        writeProxyError(response, upstreamFailure(url.hostname, Number(url.port || 80), error));
      }
    });
    pump(request, upstream, () => {});
  }
}
