/**
 * One HTTP/1.1 exchange over its own node:net connection (`Connection: close`), for a process that
 * makes a few requests and exits: a CLI command. node:http costs such a process about 15 ms more
 * (loading _http_agent, _http_client, _http_server and running their code cold for the first
 * request). The body is read to the end of the connection, then framed by Content-Length or
 * chunked encoding; 1xx answers are skipped.
 */
import { createRequire } from "node:module";

export interface PlainRequest {
  /** A host name or IP address, IPv6 without brackets. */
  hostname: string;
  port: number;
  /** The Host header: `host[:port]` as in the URL. */
  host: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer | undefined;
  /** Idle time after which the exchange fails, like node:http's `timeout`. */
  timeoutMs: number;
}

export interface PlainResponse {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: Buffer;
}

// require(), not import: the ES module namespace of a builtin reads every export (see node-crypto.ts).
const net: typeof import("node:net") = createRequire(import.meta.url)("node:net");

export function plainHttpExchange(request: PlainRequest): Promise<PlainResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: request.hostname, port: request.port });
    const chunks: Buffer[] = [];
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(request.timeoutMs, () => fail(new Error(`no answer within ${request.timeoutMs} ms`)));
    socket.on("error", fail);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => {
      if (settled) return;
      settled = true;
      try {
        resolve(parseResponse(Buffer.concat(chunks)));
      } catch (error) {
        reject(error);
      }
    });
    let head = `${request.method} ${request.path} HTTP/1.1\r\nHost: ${request.host}\r\nConnection: close\r\n`;
    for (const [name, value] of Object.entries(request.headers)) head += `${name}: ${value}\r\n`;
    socket.write(`${head}\r\n`);
    if (request.body && request.body.length > 0) socket.write(request.body);
  });
}

/** Parses a whole HTTP/1.x response (the connection has closed). Exported for tests. */
export function parseResponse(raw: Buffer): PlainResponse {
  let offset = 0;
  for (;;) {
    const headEnd = raw.indexOf("\r\n\r\n", offset);
    if (headEnd < 0) throw new Error("the connection closed before a complete HTTP answer");
    const [statusLine = "", ...lines] = raw.subarray(offset, headEnd).toString("latin1").split("\r\n");
    const match = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine);
    if (!match) throw new Error("the answer is not HTTP/1.x");
    const status = Number(match[1]);
    offset = headEnd + 4;
    if (status < 200) continue;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = raw.subarray(offset);
    return { status, headers, body: framedBody(rest, headers) };
  }
}

function framedBody(rest: Buffer, headers: Record<string, string>): Buffer {
  if (/(^|,)\s*chunked\s*$/i.test(headers["transfer-encoding"] ?? "")) return dechunk(rest);
  const declared = headers["content-length"];
  if (declared === undefined) return rest;
  const length = Number(declared);
  if (!Number.isSafeInteger(length) || length < 0)
    throw new Error("the answer has an invalid Content-Length");
  if (rest.length < length) throw new Error("the connection closed before the whole answer arrived");
  return rest.subarray(0, length);
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", offset);
    if (lineEnd < 0) throw new Error("the connection closed before the whole answer arrived");
    // The size, in hex, may carry `;extension`s, which mean nothing here.
    const size = Number.parseInt(data.subarray(offset, lineEnd).toString("latin1"), 16);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error("the answer has an invalid chunk size");
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (data.length < start + size + 2)
      throw new Error("the connection closed before the whole answer arrived");
    parts.push(data.subarray(start, start + size));
    offset = start + size + 2;
  }
}
