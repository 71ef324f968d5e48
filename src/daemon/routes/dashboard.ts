import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { errorResponses } from "../../api/errors.ts";
import { NotFoundError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";

/** The dashboard's static files: plain ES modules and CSS, shipped in the package, no build step. */
export const DASHBOARD_DIR = fileURLToPath(new URL("../../dashboard/", import.meta.url));

/** The app's client-side routes; each answers the same shell, and the script shows the page. */
export const DASHBOARD_PAGES = [
  ["/", "Dashboard: connections (the static shell)"],
  ["/providers", "Dashboard: the provider catalogue (the static shell)"],
  ["/agents", "Dashboard: agents, their scopes and activity (the static shell)"],
  ["/audit", "Dashboard: the audit log, scoped by role (the static shell)"],
  ["/login", "Dashboard: sign in or create an account (the static shell)"],
] as const;

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** Only flat, lower-case names with a known type: nothing can walk out of the folder. */
const ASSET_NAME = /^[a-z0-9][a-z0-9-]*\.(?:js|css|svg)$/;

/**
 * Only our own scripts and styles, no inline code (the CSP is the XSS backstop), no framing, no
 * referrer (a sign-in link carries a token), and revalidated on every load so an upgrade shows.
 */
const HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-cache",
};

interface StaticFile {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** Serves the dashboard shell at its page paths and its files under `/assets/`. */
export function dashboardRoutes(_context: DaemonContext, dir = DASHBOARD_DIR): FastifyPluginAsyncZod {
  const assets = new Set(readdirSync(dir).filter((name) => ASSET_NAME.test(name)));
  const cache = new Map<string, StaticFile>();

  function load(name: string): StaticFile {
    let file = cache.get(name);
    if (!file) {
      const body = readFileSync(join(dir, name));
      const hash = createHash("sha256").update(body).digest("base64url").slice(0, 22);
      file = { body, contentType: CONTENT_TYPES[extname(name)]!, etag: `"${hash}"` };
      cache.set(name, file);
    }
    return file;
  }

  function send(request: FastifyRequest, reply: FastifyReply, name: string): FastifyReply {
    const file = load(name);
    reply.headers(HEADERS).header("etag", file.etag);
    if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
    return reply.code(200).header("content-type", file.contentType).send(file.body);
  }

  return async (app) => {
    for (const [path, summary] of DASHBOARD_PAGES) {
      app.get(
        path,
        { config: { auth: "none" }, schema: { summary, tags: ["dashboard"] } },
        async (request, reply) => send(request, reply, "index.html"),
      );
    }

    app.get(
      "/assets/:file",
      {
        config: { auth: "none" },
        schema: {
          summary: "A static file of the dashboard (script, style sheet or icon)",
          tags: ["dashboard"],
          params: z.object({ file: z.string().max(64) }),
          response: errorResponses(404),
        },
      },
      async (request, reply) => {
        const { file } = request.params;
        if (!assets.has(file)) throw new NotFoundError(`the dashboard has no file ${file}`);
        return send(request, reply, file);
      },
    );
  };
}
