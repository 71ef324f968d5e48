import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  type BrowserSessionRecord,
  BrowserSessionSchema,
  DashboardLinkRequestSchema,
  DashboardLinkSchema,
  REGISTRATION_RECEIPT,
  RegistrationReceiptSchema,
  RegistrationSchema,
  SignInSchema,
} from "../../api/browser-sessions.ts";
import { errorResponses } from "../../api/errors.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { equalSecrets } from "../../core/constant-time.ts";
import { AuthenticationFailedError, OperationNotAllowedError, RateLimitedError } from "../../core/errors.ts";
import {
  DASHBOARD_LINK_TTL_MS,
  type DaemonContext,
  SIGN_IN_LIMIT_PER_ADDRESS,
  SIGN_IN_LIMIT_PER_EMAIL,
} from "../context.ts";
import { sendOutcomePage } from "../pages/html.ts";
import { sendLinkConfirmPage } from "../pages/link-page.ts";
import {
  assertSameOrigin,
  clearSessionCookie,
  daemonBaseUrl,
  readCookie,
  SESSION_COOKIE,
  secureCookieAttribute,
  setSessionCookie,
} from "../plugins/browser-auth.ts";
import { assertUnrestricted } from "../services/agent-scopes.ts";
import type { BrowserSession } from "../services/browser-sessions.ts";
import { callerScope } from "../services/caller-scope.ts";
import { DECOY_HASH, hashPassword, verifyPassword } from "../services/passwords.ts";
import type { Principal } from "../services/principals.ts";

const tags = ["dashboard"];
const linkParams = z.object({ token: z.string().max(128) });
/** The double-submit cookie of a link's confirmation page (a browser without a session has no CSRF token yet). */
const LINK_CSRF_COOKIE = "svc_link_csrf";
const LINK_EXPIRED = {
  ok: false,
  title: "This dashboard link has expired",
  message: "A link works once, for a minute. Run `svc dashboard` for a new one.",
};
const errors = errorResponses(400, 401, 403, 429);

/** Dashboard sign-in: accounts with a password, one-time links for the local CLI, sign-out. */
export function browserAuthRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  /**
   * Starts a fresh session (ending any the browser had: no fixation), sets its cookie, and audits
   * how it began (`event`: registered or signed in, by password or by link).
   */
  async function signIn(
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal,
    event: string,
    method: "password" | "link",
  ): Promise<BrowserSessionRecord> {
    const previous = readCookie(request, SESSION_COOKIE);
    if (previous) await context.browserSessions.end(previous);
    const { token, session } = await context.browserSessions.create(principal.id);
    setSessionCookie(context, request, reply, token);
    await context.audit.record({
      event,
      status: "success",
      identity: session.label,
      principal_id: principal.id,
      detail: { method },
    });
    return sessionRecord(session, principal);
  }

  /** Uses up a one-time link: a new session for its principal, then on to `next`. */
  async function useLink(
    request: FastifyRequest,
    reply: FastifyReply,
    token: string,
    next: string | undefined,
  ): Promise<FastifyReply> {
    const link = await context.dashboardLinks.take(token);
    const principal = link ? await context.principals.get(link.principalId) : undefined;
    if (!principal) return sendOutcomePage(reply, 400, LINK_EXPIRED);
    await signIn(request, reply, principal, AUDIT_EVENTS.accountSignedIn, "link");
    return reply
      .code(303)
      .header("cache-control", "no-store")
      .header("referrer-policy", "no-referrer")
      .redirect(next ?? "/", 303);
  }

  const { perEmail, perAddress } = context.signInLimits;

  /**
   * Reserves one attempt for the client address and, for a sign-in, one for the email, before
   * any slow check: parallel attempts cannot all pass a check made before any of them failed.
   * Refused (429 with Retry-After) while either is spent; nothing is then held.
   */
  async function reserveAttempt(
    reply: FastifyReply,
    address: string,
    email?: string,
  ): Promise<{ releaseAddress(): Promise<void> }> {
    const now = context.now();
    const byAddress = await perAddress.reserve(address, now);
    const byEmail = byAddress.granted && email !== undefined ? await perEmail.reserve(email, now) : undefined;
    const refused = !byAddress.granted ? byAddress : byEmail?.granted === false ? byEmail : undefined;
    if (refused) {
      if (byAddress.granted) await byAddress.release();
      reply.header("retry-after", String(refused.retryAfter));
      throw new RateLimitedError(`too many sign-in attempts; try again in ${refused.retryAfter} s`);
    }
    return { releaseAddress: () => (byAddress.granted ? byAddress.release() : Promise.resolve()) };
  }

  return async (app) => {
    app.get(
      "/api/auth/me",
      {
        config: { auth: "browser" },
        schema: {
          summary: "The signed-in dashboard session (with its CSRF token)",
          tags,
          response: { 200: BrowserSessionSchema, ...errors },
        },
      },
      async (request) => {
        const session = request.browserSession!;
        const principal = await context.principals.get(session.principalId);
        if (!principal) throw new AuthenticationFailedError("this account no longer exists; sign in again");
        return sessionRecord(session, principal);
      },
    );

    app.post(
      "/api/auth/register",
      {
        config: { auth: "none" },
        schema: {
          summary: "Create an account (the first of a fresh daemon is admin); then sign in with it",
          description:
            "Answers 202 with the same body whether or not the email already had an account, so the answer tells no one which emails exist; an attempt on a taken email changes nothing and is recorded on that account's audit log.",
          tags,
          body: RegistrationSchema,
          response: { 202: RegistrationReceiptSchema, ...errors },
        },
      },
      async (request, reply) => {
        assertSameOrigin(context, request, { requireOrigin: true });
        // Counted and never given back, so a script cannot mint accounts (or probe emails) without pause.
        await reserveAttempt(reply, request.ip);
        const { email, password } = request.body;
        // Hashed either way, so a taken email answers no faster than a new one.
        const passwordHash = await hashPassword(password);
        const principal = await context.principals.createAccount(context.now(), { email, passwordHash });
        if (principal) {
          await context.audit.record({
            event: AUDIT_EVENTS.accountRegistered,
            status: "success",
            principal_id: principal.id,
            detail: { method: "password" },
          });
        } else {
          // On the existing account's own log: its owner sees that someone tried their email.
          const existing = await context.principals.findAccount(email);
          await context.audit.record({
            event: AUDIT_EVENTS.accountRegistrationRepeated,
            status: "failure",
            principal_id: existing?.principal.id ?? null,
          });
        }
        return reply.code(202).send(REGISTRATION_RECEIPT);
      },
    );

    app.post(
      "/api/auth/login",
      {
        config: { auth: "none" },
        schema: {
          summary: "Sign in to the dashboard with email and password",
          description: `After ${SIGN_IN_LIMIT_PER_EMAIL.max} failures within 15 minutes for one email (${SIGN_IN_LIMIT_PER_ADDRESS.max} for one client address), sign-ins wait (429 with Retry-After). Attempts are counted before the password is checked, so parallel attempts do not get past the limit.`,
          tags,
          body: SignInSchema,
          response: { 200: BrowserSessionSchema, ...errors },
        },
      },
      async (request, reply) => {
        assertSameOrigin(context, request, { requireOrigin: true });
        const { email, password } = request.body;
        const attempt = await reserveAttempt(reply, request.ip, email);
        const account = await context.principals.findAccount(email);
        const ok = await verifyPassword(password, account?.passwordHash ?? DECOY_HASH);
        if (!account || !ok) {
          // The reservations stay: they are the failure's count.
          // On the account's own log when there is one: its owner sees attempts on it.
          await context.audit.record({
            event: AUDIT_EVENTS.accountSignInFailed,
            status: "failure",
            principal_id: account?.principal.id ?? null,
            detail: { method: "password" },
          });
          throw new AuthenticationFailedError("the email or password is wrong");
        }
        await perEmail.reset(email);
        await attempt.releaseAddress();
        return signIn(request, reply, account.principal, AUDIT_EVENTS.accountSignedIn, "password");
      },
    );

    app.post(
      "/api/logout",
      {
        config: { auth: "browser" },
        schema: {
          summary: "Sign out: the dashboard session ends on the server and its cookie is cleared",
          tags,
          body: z.unknown().optional(),
          response: { 204: z.null(), ...errors },
        },
      },
      async (request, reply) => {
        const session = request.browserSession!;
        await context.browserSessions.end(readCookie(request, SESSION_COOKIE)!);
        clearSessionCookie(context, request, reply);
        await context.audit.record({
          event: AUDIT_EVENTS.accountSignedOut,
          status: "success",
          identity: session.label,
          principal_id: session.principalId,
        });
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/api/session",
      {
        schema: {
          summary: "A one-time dashboard sign-in link for the calling identity's principal (PoP)",
          description: "The link works once, within 60 seconds; `svc dashboard` opens it.",
          tags,
          security: [{ pop: [] }],
          body: DashboardLinkRequestSchema.optional(),
          response: { 200: DashboardLinkSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        // A dashboard session acts as the whole principal, scope-free.
        assertUnrestricted(scope.guard, "open the dashboard");
        const { token, expiresAt } = await context.dashboardLinks.issue({ principalId: scope.principal.id });
        const next = request.body?.next;
        const query = next && next !== "/" ? `?next=${encodeURIComponent(next)}` : "";
        return {
          url: `${daemonBaseUrl(context, request)}/auth/link/${token}${query}`,
          expires_at: expiresAt.toISOString(),
        };
      },
    );

    app.get(
      "/auth/link/:token",
      {
        config: { auth: "none" },
        schema: {
          summary: "Open a one-time dashboard link: signs the browser in and goes on to the dashboard",
          description:
            "Opened from another site (`Sec-Fetch-Site` other than `none` or `same-origin`), or in a browser signed in as another principal, it answers a confirmation page instead and keeps the link; the page continues with `POST /auth/link/{token}`.",
          tags,
          params: linkParams,
          querystring: z.object({ next: DashboardLinkRequestSchema.shape.next }),
        },
      },
      async (request, reply) => {
        const { token } = request.params;
        const link = await context.dashboardLinks.peek(token);
        const target = link ? await context.principals.get(link.value.principalId) : undefined;
        if (!target) return sendOutcomePage(reply, 400, LINK_EXPIRED);
        const cookie = readCookie(request, SESSION_COOKIE);
        const session = cookie ? await context.browserSessions.find(cookie) : undefined;
        const current = session ? await context.principals.get(session.principalId) : undefined;
        const site = request.headers["sec-fetch-site"];
        const fromAnotherSite = site !== undefined && site !== "none" && site !== "same-origin";
        if (fromAnotherSite || (current && current.id !== target.id)) {
          const csrfToken = randomBytes(32).toString("base64url");
          reply.header(
            "set-cookie",
            `${LINK_CSRF_COOKIE}=${csrfToken}; Max-Age=${Math.floor(DASHBOARD_LINK_TTL_MS / 1000)}; Path=/auth/link; HttpOnly; SameSite=Strict${secureCookieAttribute(context, request)}`,
          );
          return sendLinkConfirmPage(reply, { token, next: request.query.next, target, current, csrfToken });
        }
        return useLink(request, reply, token, request.query.next);
      },
    );

    app.post(
      "/auth/link/:token",
      {
        config: { auth: "none" },
        schema: {
          summary: "Confirm a one-time dashboard link from its confirmation page",
          description:
            "Same Origin, and the page's `csrf_token` form field matching its short-lived cookie; then as opening the link.",
          tags,
          params: linkParams,
          body: z.object({
            csrf_token: z.string().max(128).optional(),
            next: DashboardLinkRequestSchema.shape.next,
          }),
        },
      },
      async (request, reply) => {
        assertSameOrigin(context, request, { requireOrigin: true });
        const expected = readCookie(request, LINK_CSRF_COOKIE);
        const sent = request.body.csrf_token;
        if (!expected || sent === undefined || !equalSecrets(expected, sent)) {
          throw new OperationNotAllowedError(
            "this confirmation's CSRF token is missing or wrong; open the link again (or run `svc dashboard`)",
          );
        }
        return useLink(request, reply, request.params.token, request.body.next);
      },
    );
  };
}

function sessionRecord(session: BrowserSession, principal: Principal): BrowserSessionRecord {
  return {
    principal_id: principal.id,
    role: principal.role,
    email: principal.email,
    identity: session.label,
    csrf_token: session.csrfToken,
    expires_at: session.expiresAt.toISOString(),
  };
}
