import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTcpServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { parseResponse, plainHttpExchange } from "./plain-http.ts";

const servers: Array<{ close: () => void }> = [];

afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function listen(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<number> {
  const server: Server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

function exchange(port: number, options: { method?: string; body?: Buffer; timeoutMs?: number } = {}) {
  return plainHttpExchange({
    hostname: "127.0.0.1",
    port,
    host: `127.0.0.1:${port}`,
    method: options.method ?? "GET",
    path: "/api/thing?x=1",
    headers: {
      accept: "application/json",
      ...(options.body ? { "content-length": String(options.body.length) } : {}),
    },
    body: options.body,
    timeoutMs: options.timeoutMs ?? 5_000,
  });
}

describe("plainHttpExchange", () => {
  it("sends method, path, Host and headers, and reads a Content-Length answer", async () => {
    let seen: { method?: string; url?: string; host?: string; accept?: string; connection?: string } = {};
    const port = await listen((request, response) => {
      seen = {
        method: request.method,
        url: request.url,
        host: request.headers.host,
        accept: request.headers.accept,
        connection: request.headers.connection,
      };
      response.writeHead(201, { "content-type": "application/json", "retry-after": "1" });
      response.end('{"ok":"ü"}');
    });
    const answer = await exchange(port);
    expect(seen).toEqual({
      method: "GET",
      url: "/api/thing?x=1",
      host: `127.0.0.1:${port}`,
      accept: "application/json",
      connection: "close",
    });
    expect(answer.status).toBe(201);
    expect(answer.headers["retry-after"]).toBe("1");
    expect(answer.body.toString("utf8")).toBe('{"ok":"ü"}');
  });

  it("sends a body and reads a chunked answer", async () => {
    const port = await listen((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        response.writeHead(200);
        response.write("echo:");
        response.write(Buffer.concat(chunks));
        response.end();
      });
    });
    const answer = await exchange(port, { method: "POST", body: Buffer.from('{"a":1}') });
    expect(answer.body.toString()).toBe('echo:{"a":1}');
  });

  it("fails with the socket's code when nothing listens", async () => {
    const port = await listen(() => {});
    for (const server of servers.splice(0)) server.close();
    await expect(exchange(port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("fails after the idle timeout when the server never answers", async () => {
    const server = createTcpServer(() => {});
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    await expect(exchange(port, { timeoutMs: 100 })).rejects.toThrow("no answer within 100 ms");
  });
});

describe("parseResponse", () => {
  const parse = (text: string) => parseResponse(Buffer.from(text, "latin1"));

  it("skips 1xx answers and keeps header names in lower case", () => {
    const answer = parse(
      "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 404 Not Found\r\nX-Thing: a\r\nContent-Length: 2\r\n\r\n{}",
    );
    expect(answer).toMatchObject({ status: 404, headers: { "x-thing": "a" } });
    expect(answer.body.toString()).toBe("{}");
  });

  it("decodes chunks with extensions", () => {
    const answer = parse(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n",
    );
    expect(answer.body.toString()).toBe("abc0123456789");
  });

  it("refuses a cut-off answer", () => {
    expect(() => parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")).toThrow("closed before");
    expect(() => parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")).toThrow(
      "closed before",
    );
    expect(() => parse("HTTP/1.1 200 OK\r\nContent-")).toThrow("closed before");
    expect(() => parse("SSH-2.0-OpenSSH\r\n\r\n")).toThrow("not HTTP/1.x");
  });
});
