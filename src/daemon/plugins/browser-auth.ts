import type { FastifyReply, FastifyRequest } from "fastify";
import { AuthenticationFailedError, OperationNotAllowedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { BROWSER_SESSION_TTL_MS, type BrowserSession, csrfMatches } from "../services/browser-sessions.ts";

export const SESSION_COOKIE = "svc_session";
export const CSRF_HEADER = "x-csrf-token";

declare module "fastify" {
  interface FastifyRequest {
    browserSession?: BrowserSession;
  }
}

/** The URL this daemon is reached at (for links it hands out): the public URL, else the Host it was asked on. */
export function daemonBaseUrl(context: DaemonContext, request: FastifyRequest): string {
  return context.config.publicUrl?.replace(/\/+$/, "") ?? `${request.protocol}://${request.headers.host}`;
}

/**
 * A browser request that changes something must come from the daemon's own pages: a cross-site
 * Origin (or a browser saying cross-site) is refused. `requireOrigin` also refuses a request
 * without Origin, which every current browser sends on POST, and one whose `Sec-Fetch-Site` is
 * anything but `same-origin` (a sibling subdomain is not the daemon either).
 */
export function assertSameOrigin(
  context: DaemonContext,
  request: FastifyRequest,
  options: { requireOrigin?: boolean } = {},
): void {
  const origin = request.headers.origin;
  const site = request.headers["sec-fetch-site"];
  const own = new URL(daemonBaseUrl(context, request)).origin;
  const siteRefused = options.requireOrigin
    ? site !== undefined && site !== "same-origin"
    : site === "cross-site";
  if (siteRefused || (origin === undefined ? options.requireOrigin : origin !== own)) {
    throw new OperationNotAllowedError(
      `this request must come from a page svc served (Origin ${origin ?? "missing"}, expected ${own})`,
    );
  }
}

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** `; Secure` when the daemon is reached over https, so its cookies never travel in the clear. */
export function secureCookieAttribute(context: DaemonContext, request: FastifyRequest): string {
  const secure = request.protocol === "https" || context.config.publicUrl?.startsWith("https:");
  return secure ? "; Secure" : "";
}

function cookieAttributes(context: DaemonContext, request: FastifyRequest): string {
  return `Path=/; HttpOnly; SameSite=Lax${secureCookieAttribute(context, request)}`;
}

export function setSessionCookie(
  context: DaemonContext,
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
): void {
  const maxAge = Math.floor(BROWSER_SESSION_TTL_MS / 1000);
  reply.header(
    "set-cookie",
    `${SESSION_COOKIE}=${token}; Max-Age=${maxAge}; ${cookieAttributes(context, request)}`,
  );
}

export function clearSessionCookie(
  context: DaemonContext,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  reply.header("set-cookie", `${SESSION_COOKIE}=; Max-Age=0; ${cookieAttributes(context, request)}`);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The CSRF token a request carries: the header (fetch) or a `csrf_token` form field. */
function csrfTokenOf(request: FastifyRequest): unknown {
  const header = request.headers[CSRF_HEADER];
  if (typeof header === "string") return header;
  const body = request.body;
  return body && typeof body === "object" ? (body as Record<string, unknown>).csrf_token : undefined;
}

/**
 * Authenticates a request by its dashboard session cookie. A request that changes something must
 * also come from the daemon's own origin and carry the session's CSRF token.
 */
export async function authenticateBrowser(context: DaemonContext, request: FastifyRequest): Promise<void> {
  const token = readCookie(request, SESSION_COOKIE);
  const session = token ? await context.browserSessions.find(token) : undefined;
  if (!session) {
    throw new AuthenticationFailedError(
      "sign in to the dashboard first (run `svc dashboard`, or sign in with your email and password)",
    );
  }
  if (!SAFE_METHODS.has(request.method)) {
    assertSameOrigin(context, request, { requireOrigin: true });
    if (!csrfMatches(session, csrfTokenOf(request))) {
      throw new OperationNotAllowedError(
        "the request's CSRF token is missing or wrong; reload the dashboard and try again",
      );
    }
  }
  request.browserSession = session;
  request.caller = { handle: session.label, did: "", principalId: session.principalId };
}
