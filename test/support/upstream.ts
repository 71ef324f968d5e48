import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { gzipSync } from "node:zlib";
import { WebSocketServer } from "ws";
import { SvcSandbox } from "./cli.ts";
import { startLocalHttpsHost } from "./https-host.ts";

export interface SeenRequest {
  method: string;
  host: string;
  /** The path without the query string. */
  path: string;
  /** The path with the query string, as sent. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** A WebSocket (or other) upgrade request. */
  upgrade?: boolean;
}

export interface Download {
  total: number;
  sent: number;
  closedEarly: boolean;
}

export interface Upstream {
  port: number;
  /** The upstream's own CA (PEM file): trust it via NODE_EXTRA_CA_CERTS. */
  caPath: string;
  /** SVC_PROXY_CONNECT_TO sending each host's port 443 here. */
  connectTo(hosts: readonly string[]): string;
  /** Every request the upstream saw (WebSocket handshakes too): method, host header, path and headers. */
  seen: SeenRequest[];
  /** Each `/bytes` answer: bytes written so far, and whether its connection closed before the end. */
  downloads: Download[];
  close(): Promise<void>;
}

/**
 * A local HTTPS API with its own test CA that answers for any host name (SNI):
 * `/echo` returns the request headers as JSON, `/echo-header` repeats Authorization in a response
 * header, `/echo-encoded` returns the credential (Authorization without its scheme, or x-api-key)
 * base64-, base64url- and percent-encoded and inside a Basic credential, as JSON and in a response
 * header, `/echo-gzip` is `/echo` gzip-encoded, `/status/<code>`, `/truncated` announces 100 bytes
 * and closes after 10, `/bytes?mb=N` streams N MiB (`&chunked=1`: without a Content-Length; each recorded in `downloads`),
 * `/upload` answers the byte count and SHA-256 of the request body, `/redirect?to=URL&status=S`
 * redirects to URL (status 302 unless given), `/sse?n=N&ms=M` streams N
 * events (default 3) M ms apart (default 50), and a WebSocket upgrade first sends the handshake's
 * Authorization as JSON, then echoes messages back.
 */
export async function startUpstream(): Promise<Upstream> {
  const seen: SeenRequest[] = [];
  const downloads: Download[] = [];
  const record = (request: IncomingMessage, upgrade = false): SeenRequest => ({
    method: request.method ?? "GET",
    host: request.headers.host ?? "",
    path: new URL(request.url ?? "/", "https://upstream").pathname,
    url: request.url ?? "/",
    headers: { ...request.headers },
    ...(upgrade ? { upgrade } : {}),
  });
  const host = await startLocalHttpsHost((request, response) => {
    const url = new URL(request.url ?? "/", "https://upstream");
    seen.push(record(request));
    const echo = JSON.stringify({ method: request.method, path: request.url, headers: request.headers });
    if (url.pathname === "/echo") {
      request.resume();
      response.writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(echo),
      });
      response.end(echo);
    } else if (url.pathname === "/echo-header") {
      response.writeHead(200, { "x-echo-authorization": String(request.headers.authorization ?? "") });
      response.end("ok");
    } else if (url.pathname === "/echo-encoded") {
      const header = String(request.headers.authorization ?? request.headers["x-api-key"] ?? "");
      const credential = header.replace(/^\S+ /, "");
      const encoded = {
        base64: Buffer.from(credential).toString("base64"),
        base64url: Buffer.from(credential).toString("base64url"),
        basic: Buffer.from(`user:${credential}`).toString("base64"),
        percent: encodeURIComponent(credential),
        header_base64: Buffer.from(header).toString("base64"),
      };
      response.writeHead(200, {
        "content-type": "application/json",
        "x-echo-basic": `Basic ${encoded.basic}`,
      });
      response.end(JSON.stringify(encoded));
    } else if (url.pathname === "/echo-gzip") {
      response.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      response.end(gzipSync(echo));
    } else if (url.pathname === "/redirect") {
      request.resume();
      response.writeHead(Number(url.searchParams.get("status") ?? "302"), {
        location: url.searchParams.get("to") ?? "/echo",
      });
      response.end();
    } else if (url.pathname === "/truncated") {
      response.writeHead(200, { "content-type": "text/plain", "content-length": 100 });
      response.write("0123456789", () => response.socket?.destroy());
    } else if (url.pathname.startsWith("/status/")) {
      response.writeHead(Number(url.pathname.slice(8)));
      response.end();
    } else if (url.pathname === "/bytes") {
      const download: Download = {
        total: Number(url.searchParams.get("mb") ?? "1") * 1024 * 1024,
        sent: 0,
        closedEarly: false,
      };
      downloads.push(download);
      response.once("close", () => {
        download.closedEarly = !response.writableFinished;
      });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      // `chunked=1`: no Content-Length, so the body goes chunked.
      const length = url.searchParams.get("chunked") === "1" ? {} : { "content-length": download.total };
      response.writeHead(200, { "content-type": "application/octet-stream", ...length });
      const pump = () => {
        while (download.sent < download.total) {
          const piece = chunk.subarray(0, Math.min(chunk.length, download.total - download.sent));
          download.sent += piece.length;
          if (!response.write(piece)) return void response.once("drain", pump);
        }
        response.end();
      };
      pump();
    } else if (url.pathname === "/upload") {
      let bytes = 0;
      const hash = createHash("sha256");
      request.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        hash.update(chunk);
      });
      request.on("end", () => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ bytes, sha256: hash.digest("hex") }));
      });
    } else if (url.pathname === "/sse") {
      const events = Math.min(Number(url.searchParams.get("n") ?? "3"), 1000);
      response.writeHead(200, { "content-type": "text/event-stream" });
      let count = 0;
      const timer = setInterval(
        () => {
          response.write(`data: event ${++count}\n\n`);
          if (count >= events) {
            clearInterval(timer);
            response.end();
          }
        },
        Number(url.searchParams.get("ms") ?? "50"),
      );
      response.once("close", () => clearInterval(timer));
    } else {
      response.writeHead(404);
      response.end();
    }
  });
  const sockets = new WebSocketServer({ server: host.server });
  host.server.on("upgrade", (request: IncomingMessage) => seen.push(record(request, true)));
  sockets.on("connection", (socket, request) => {
    socket.send(JSON.stringify({ authorization: request.headers.authorization ?? null }));
    socket.on("message", (data) => socket.send(data.toString()));
  });
  return {
    port: host.port,
    caPath: host.caPath,
    connectTo: host.connectTo,
    seen,
    downloads,
    async close() {
      sockets.close();
      await host.close();
    },
  };
}

/** An upstream and a CLI sandbox whose proxy reaches it for `hosts` (and trusts its CA). */
export async function startProxiedSandbox(
  hosts: readonly string[],
): Promise<{ upstream: Upstream; sandbox: SvcSandbox; close(): Promise<void> }> {
  const upstream = await startUpstream();
  const sandbox = await SvcSandbox.create({
    NODE_EXTRA_CA_CERTS: upstream.caPath,
    SVC_PROXY_CONNECT_TO: upstream.connectTo(hosts),
  });
  return {
    upstream,
    sandbox,
    async close() {
      await sandbox.destroy();
      await upstream.close();
    },
  };
}
