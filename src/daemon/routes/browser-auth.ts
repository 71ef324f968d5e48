import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  type BrowserSessionRecord,
  BrowserSessionSchema,
  DashboardLinkRequestSchema,
  DashboardLinkSchema,
  RegistrationSchema,
  SignInSchema,
} from "../../api/browser-sessions.ts";
import { errorResponses } from "../../api/errors.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { AuthenticationFailedError, RateLimitedError } from "../../core/errors.ts";
import { type DaemonContext, SIGN_IN_LIMIT_PER_ADDRESS, SIGN_IN_LIMIT_PER_EMAIL } from "../context.ts";
import { sendOutcomePage } from "../pages/html.ts";
import {
  assertSameOrigin,
  clearSessionCookie,
  daemonBaseUrl,
  readCookie,
  SESSION_COOKIE,
  setSessionCookie,
} from "../plugins/browser-auth.ts";
import { assertUnrestricted } from "../services/agent-scopes.ts";
import type { BrowserSession } from "../services/browser-sessions.ts";
import { callerScope } from "../services/caller-scope.ts";
import { DECOY_HASH, hashPassword, verifyPassword } from "../services/passwords.ts";
import type { Principal } from "../services/principals.ts";

const tags = ["dashboard"];
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

  const { perEmail, perAddress } = context.signInLimits;

  /** Refuses a sign-in while the email or the client address has too many recent failures. */
  async function checkLimit(reply: FastifyReply, address: string, email?: string): Promise<void> {
    const now = context.now();
    const wait = Math.max(
      await perAddress.retryAfter(address, now),
      email === undefined ? 0 : await perEmail.retryAfter(email, now),
    );
    if (wait > 0) {
      reply.header("retry-after", String(wait));
      throw new RateLimitedError(`too many failed sign-ins; try again in ${wait} s`);
    }
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
          summary: "Create an account (the first of a fresh daemon is admin) and sign in",
          tags,
          body: RegistrationSchema,
          response: { 201: BrowserSessionSchema, ...errors },
        },
      },
      async (request, reply) => {
        assertSameOrigin(context, request);
        await checkLimit(reply, request.ip);
        const { email, password } = request.body;
        // Counted like a failure, so a script cannot mint accounts (or probe emails) without pause.
        await perAddress.fail(request.ip, context.now());
        const principal = await context.principals.create(context.now(), {
          email,
          passwordHash: await hashPassword(password),
        });
        const record = await signIn(request, reply, principal, AUDIT_EVENTS.accountRegistered, "password");
        return reply.code(201).send(record);
      },
    );

    app.post(
      "/api/auth/login",
      {
        config: { auth: "none" },
        schema: {
          summary: "Sign in to the dashboard with email and password",
          description: `After ${SIGN_IN_LIMIT_PER_EMAIL.max} failures within 15 minutes for one email (${SIGN_IN_LIMIT_PER_ADDRESS.max} for one client address), sign-ins wait (429 with Retry-After).`,
          tags,
          body: SignInSchema,
          response: { 200: BrowserSessionSchema, ...errors },
        },
      },
      async (request, reply) => {
        assertSameOrigin(context, request);
        const { email, password } = request.body;
        await checkLimit(reply, request.ip, email);
        const account = await context.principals.findAccount(email);
        const ok = await verifyPassword(password, account?.passwordHash ?? DECOY_HASH);
        if (!account || !ok) {
          await perEmail.fail(email, context.now());
          await perAddress.fail(request.ip, context.now());
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
          tags,
          params: z.object({ token: z.string().max(128) }),
          querystring: z.object({ next: DashboardLinkRequestSchema.shape.next }),
        },
      },
      async (request, reply) => {
        const link = await context.dashboardLinks.take(request.params.token);
        const principal = link ? await context.principals.get(link.principalId) : undefined;
        if (!principal) {
          return sendOutcomePage(reply, 400, {
            ok: false,
            title: "This dashboard link has expired",
            message: "A link works once, for a minute. Run `svc dashboard` for a new one.",
          });
        }
        await signIn(request, reply, principal, AUDIT_EVENTS.accountSignedIn, "link");
        return reply
          .code(303)
          .header("cache-control", "no-store")
          .header("referrer-policy", "no-referrer")
          .redirect(request.query.next ?? "/", 303);
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
