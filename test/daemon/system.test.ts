import { chmodSync, readFileSync } from "node:fs";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Readiness } from "../../src/api/health.ts";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

function rawGet(path: string, host: string): Promise<{ status: number; body: string }> {
  const url = new URL(t.daemon.url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path, headers: { host } },
      (response) => {
        let body = "";
        response.on("data", (chunk) => {
          body += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on("error", reject);
    request.end();
  });
}

describe("GET /api/health", () => {
  it("answers without authentication with exactly the spec's fields and the home's instance id", async () => {
    const response = await fetch(`${t.daemon.url}/api/health`);
    expect(response.status).toBe(200);
    const body = await response.json();
    const version = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version;
    expect(body).toEqual({
      status: "ok",
      version,
      instance_id: readFileSync(t.layout.instanceId, "utf8").trim(),
      configured_encryption_mode: "local_key",
      effective_encryption_source: "local_key",
      encryption_backend: expect.stringContaining("master.key"),
    });
  });
});

describe("GET /api/ready", () => {
  it("is ready with every check ok on a fresh daemon", async () => {
    const ready = await t.client.get<Readiness>("/api/ready");
    expect(ready.status).toBe("ready");
    expect(ready.checks).toEqual({
      store: "ok",
      vault: "ok",
      integrity: "ok",
      identity: "ok",
      providers: "ok",
      connections: "ok",
      spec_version: "ok",
    });
    expect(ready.issues).toEqual([]);
    expect(ready.store_backend).toBe(`SQLite ${t.layout.database}`);
  });

  it("warns when the master key file is readable by others", async () => {
    chmodSync(t.layout.masterKey, 0o644);
    try {
      const ready = await t.client.get<Readiness>("/api/ready");
      expect(ready.warnings?.join("\n")).toMatch(/master\.key.*0644/);
    } finally {
      chmodSync(t.layout.masterKey, 0o600);
    }
  });
});

describe("Host header guard", () => {
  it("refuses a request whose Host is not the daemon's own name (DNS rebinding)", async () => {
    const response = await rawGet("/api/health", "attacker.example:7998");
    expect(response.status).toBe(403);
    expect(JSON.parse(response.body).error).toBe("OperationNotAllowedError");
  });

  it("answers to localhost and 127.0.0.1 on its own port", async () => {
    const port = new URL(t.daemon.url).port;
    expect((await rawGet("/api/health", `localhost:${port}`)).status).toBe(200);
    expect((await rawGet("/api/health", `127.0.0.1:${port}`)).status).toBe(200);
    expect((await rawGet("/api/health", "127.0.0.1:1")).status).toBe(403);
  });
});

describe("request errors", () => {
  it("answers malformed JSON with 400 InvalidInputError", async () => {
    const body = "{not json";
    const pop = signPopToken({ ...t.identity, method: "POST", pathAndQuery: "/api/identities", body });
    const response = await fetch(`${t.daemon.url}/api/identities`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `PoP ${pop}` },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: "InvalidInputError" });
  });

  it("answers an unknown route with 404 and the error shape", async () => {
    const response = await fetch(`${t.daemon.url}/nope`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: "NotFoundError" });
  });
});

describe("OpenAPI and /docs", () => {
  it("lists every route the daemon serves in /openapi.json (OpenAPI 3.1)", async () => {
    const spec = (await (await fetch(`${t.daemon.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(spec.openapi).toBe("3.1.0");
    const documented = new Set(
      Object.entries(spec.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
      ),
    );
    // Fastify writes path parameters as `:name`, OpenAPI as `{name}`.
    const served = t.daemon.app.servedRoutes
      .filter((route) => !route.includes(" /docs"))
      .map((route) => route.replace(/:([A-Za-z_]+)/g, "{$1}"));
    expect(served).toContain("GET /api/whoami");
    for (const route of served) expect(documented, `${route} is served but not documented`).toContain(route);
  });

  it("serves swagger-ui at /docs with its assets from the daemon, no CDN", async () => {
    const page = await fetch(`${t.daemon.url}/docs/static/index.html`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("swagger-ui");
    expect(html).not.toMatch(/<script[^>]+src="https?:\/\//);
    expect(html).not.toMatch(/<link[^>]+href="https?:\/\//);
    const bundle = await fetch(`${t.daemon.url}/docs/static/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
  });
});
