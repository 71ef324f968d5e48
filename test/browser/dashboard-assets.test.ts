import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DASHBOARD_DIR } from "../../src/daemon/routes/dashboard.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** What the daemon serves the dashboard with; no browser needed. */
let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** A GET with the path sent exactly as written (fetch would normalise `..`). */
function rawGet(path: string): Promise<number> {
  const url = new URL(t.daemon.url);
  return new Promise((resolve, reject) => {
    http
      .get({ host: url.hostname, port: url.port, path }, (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      })
      .on("error", reject);
  });
}

describe("the dashboard shell and its assets", () => {
  it("serves the same shell at every page path, without authentication, with the strict headers", async () => {
    const shell = readFileSync(join(DASHBOARD_DIR, "index.html"), "utf8");
    for (const path of ["/", "/providers", "/agents", "/audit", "/login", "/login?next=%2Faudit"]) {
      const response = await fetch(`${t.daemon.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("content-security-policy")).toBe(CSP);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      expect(await response.text()).toBe(shell);
    }
  });

  it("serves each asset with its type, and answers 304 to a matching If-None-Match", async () => {
    const types: Record<string, string> = {
      "app.js": "text/javascript; charset=utf-8",
      "styles.css": "text/css; charset=utf-8",
      "logo.svg": "image/svg+xml",
    };
    for (const [file, type] of Object.entries(types)) {
      const response = await fetch(`${t.daemon.url}/assets/${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get("content-type")).toBe(type);
      expect(response.headers.get("content-security-policy")).toBe(CSP);
      const etag = response.headers.get("etag")!;
      expect(etag).toMatch(/^"[\w-]+"$/);
      const again = await fetch(`${t.daemon.url}/assets/${file}`, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
    }
  });

  it("serves only the dashboard's own files: no other name, no way out of the folder", async () => {
    for (const path of [
      "/assets/index.html",
      "/assets/nope.js",
      "/assets/..%2Fdaemon%2Fapp.ts",
      "/assets/%2e%2e%2f%2e%2e%2fpackage.json",
      "/assets/../../package.json",
      "/assets/.hidden.js",
      "/assets/APP.JS",
    ]) {
      expect(await rawGet(path), path).toBe(404);
    }
    expect((await fetch(`${t.daemon.url}/nope`)).status).toBe(404);
  });

  it("loads nothing from another site: no CDN, no external fonts, no inline script or style", () => {
    for (const file of readdirSync(DASHBOARD_DIR)) {
      const text = readFileSync(join(DASHBOARD_DIR, file), "utf8").replaceAll(
        "http://www.w3.org/2000/svg",
        "",
      );
      expect(text, file).not.toMatch(/https?:\/\//);
      expect(text, file).not.toMatch(/@import|url\((?!#)/);
      if (file.endsWith(".html")) {
        expect(text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
        expect(text).not.toMatch(/<style|\sstyle=/);
      }
      if (file.endsWith(".js"))
        expect(text, file).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|eval\(/);
    }
  });
});
