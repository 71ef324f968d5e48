import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { customProvider, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
  await t.client.post("/api/providers", customProvider("acme"));
});
afterAll(async () => {
  await t.stop();
});

interface Answer {
  status: number;
  body: { error?: string; message?: string };
}

/** Sends `target` exactly as written (no URL normalisation on the way), with no credentials. */
function rawRequest(method: string, target: string): Promise<Answer> {
  const url = new URL(t.daemon.url);
  const body = method === "GET" || method === "DELETE" ? undefined : "{}";
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: target,
        headers: body ? { "content-type": "application/json" } : {},
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: Answer["body"] = {};
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = { message: text.slice(0, 80) };
          }
          resolve({ status: response.statusCode ?? 0, body: parsed });
        });
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}

/** The ways one path can be spelled so that a naive prefix test on the raw URL misses it. */
function encodedVariants(path: string): string[] {
  const [, first = "", rest = ""] = /^\/([^/]*)(.*)$/.exec(path) ?? [];
  const hex = (char: string) => `%${char.charCodeAt(0).toString(16)}`;
  return [
    `/${hex(first[0]!)}${first.slice(1)}${rest}`,
    `/${[...first].map(hex).join("")}${rest}`,
    `/%2F${first}${rest}`,
    `//${first}${rest}`,
    `/./${first}${rest}`,
    `/${first.toUpperCase()}${rest}`,
    `/${first}${rest.replace(/[a-z]/, hex)}`,
  ];
}

/** A concrete path for a route pattern: every parameter becomes a plausible value. */
function concretePath(pattern: string): string {
  return pattern
    .replace(/:provider/g, "acme")
    .replace(/:[A-Za-z_]+/g, "x")
    .replace(/\*$/, "x");
}

describe("PoP is decided by the route that runs, not by the raw URL", () => {
  it("refuses GET /%61pi/providers/<custom> without a token, as it refuses /api/providers/<custom>", async () => {
    const plain = await rawRequest("GET", "/api/providers/acme");
    expect(plain.status).toBe(401);
    const encoded = await rawRequest("GET", "/%61pi/providers/acme");
    expect(encoded.status).toBe(401);
    expect(encoded.body.error).toBe("AuthenticationFailedError");
  });

  it("lets no encoded spelling of any protected route reach its handler without a token", async () => {
    const protectedRoutes: string[] = [];
    const reached: string[] = [];
    for (const served of t.daemon.app.servedRoutes) {
      const [method, pattern] = served.split(" ") as [string, string];
      const path = concretePath(pattern);
      const plain = await rawRequest(method, path);
      // Routes an anonymous caller may use (health, the claim page, sign-in) have nothing to bypass.
      if (plain.status !== 401) continue;
      protectedRoutes.push(served);
      for (const variant of encodedVariants(path)) {
        const answer = await rawRequest(method, variant);
        const routeMissing = answer.status === 404 && answer.body.error === "NotFoundError";
        const refusedAlike =
          answer.status === plain.status &&
          answer.body.error === plain.body.error &&
          answer.body.message === plain.body.message;
        if (!routeMissing && !refusedAlike) {
          reached.push(
            `${method} ${variant} -> ${answer.status} ${answer.body.error}: ${answer.body.message}`,
          );
        }
      }
    }
    expect(protectedRoutes.length).toBeGreaterThan(15);
    expect(protectedRoutes).toContain("POST /audit/events");
    expect(reached).toEqual([]);
  });
});
