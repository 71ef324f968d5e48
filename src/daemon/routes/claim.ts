import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { OperationNotAllowedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { sendClaimConfirm, sendClaimSignIn } from "../pages/claim-page.ts";
import { sendOutcomePage } from "../pages/html.ts";
import { readCookie, SESSION_COOKIE } from "../plugins/browser-auth.ts";

const tags = ["dashboard"];
const params = z.object({ token: z.string().min(1).max(128) });

const EXPIRED = {
  ok: false,
  title: "This claim link has expired",
  message:
    "A claim link works once, for 10 minutes. Run `svc onboard` again on the machine that asked for a new one.",
};

/** Remote daemons: a person attaches an identity to their account through a one-time link. */
export function claimRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      "/api/claim/:token",
      {
        config: { auth: "none" },
        schema: { summary: "The claim confirmation page (sign in first when signed out)", tags, params },
      },
      async (request, reply) => {
        const { token } = request.params;
        const claim = await context.claims.peek(token);
        // A revoked identity's pending links die with it.
        const revoked = claim && (await context.identities.find(claim.value.handle))?.revokedAt;
        if (!claim || revoked) return sendOutcomePage(reply, 400, EXPIRED);
        const view = { token, ...claim.value, expiresAt: claim.expiresAt };
        const cookie = readCookie(request, SESSION_COOKIE);
        const session = cookie ? await context.browserSessions.find(cookie) : undefined;
        const principal = session ? await context.principals.get(session.principalId) : undefined;
        if (!session || !principal) return sendClaimSignIn(reply, view);
        return sendClaimConfirm(reply, view, session, principal);
      },
    );

    app.post(
      "/api/claim/:token/confirm",
      {
        config: { auth: "browser" },
        schema: {
          summary: "Attach the identity of a claim link to the signed-in account",
          description:
            "Cookie session, same Origin, and the session's CSRF token (form field `csrf_token` or header `X-CSRF-Token`). The link is used up.",
          tags,
          params,
          body: z.object({ csrf_token: z.string().max(128).optional() }).optional(),
        },
      },
      async (request, reply) => {
        const claim = await context.claims.take(request.params.token);
        if (!claim) return sendOutcomePage(reply, 400, EXPIRED);
        const principalId = request.browserSession!.principalId;
        try {
          await context.identities.claim(claim.handle, principalId, context.now());
        } catch (error) {
          if (!(error instanceof OperationNotAllowedError)) throw error;
          return sendOutcomePage(reply, 409, {
            ok: false,
            title: "This identity cannot be claimed",
            message: error.message,
          });
        }
        await context.audit.record({
          event: AUDIT_EVENTS.identityClaimed,
          status: "success",
          identity: claim.handle,
          principal_id: principalId,
          detail: { method: "link" },
        });
        return sendOutcomePage(reply, 200, {
          ok: true,
          title: "Identity claimed",
          message: `${claim.handle} now acts for your account. Return to your terminal.`,
        });
      },
    );
  };
}
