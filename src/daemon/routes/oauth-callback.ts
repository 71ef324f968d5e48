import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { SvcError, UnexpectedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { sendOutcomePage } from "../pages/html.ts";
import { returnHint } from "../services/auth-sessions.ts";
import { OAUTH_CALLBACK_PATH } from "../services/oauth-login.ts";

const param = z.string().max(4096).optional();

/** Where the provider sends the browser back after sign-in (PKCE and DCR + PKCE). */
export function oauthCallbackRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      OAUTH_CALLBACK_PATH,
      {
        config: { auth: "none" },
        schema: {
          summary: "OAuth 2.0 redirect target: finishes the login whose `state` this is (once)",
          tags: ["auth sessions"],
          querystring: z.object({
            state: param,
            code: param,
            error: param,
            error_description: param,
            iss: param,
          }),
        },
      },
      async (request, reply) => {
        let session: Awaited<ReturnType<typeof context.oauthLogins.callback>>;
        try {
          session = await context.oauthLogins.callback(request.query, (name) => context.providers.get(name));
        } catch (raw) {
          const error =
            raw instanceof SvcError ? raw : new UnexpectedError("the sign-in could not be finished");
          return sendOutcomePage(reply, 400, {
            ok: false,
            title: "This sign-in cannot be used",
            message: error.message,
          });
        }
        const provider = context.providers.get(session.provider);
        if (session.status === "completed") {
          return sendOutcomePage(reply, 200, {
            ok: true,
            title: `${provider.display_name} connected`,
            message: `svc stored the sign-in encrypted as connection "${session.connection}". ${returnHint(session)}`,
          });
        }
        return sendOutcomePage(reply, 400, {
          ok: false,
          title: `${provider.display_name} was not connected`,
          message: session.error?.message ?? `the login is ${session.status.replaceAll("_", " ")}`,
        });
      },
    );
  };
}
