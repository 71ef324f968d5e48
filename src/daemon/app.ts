import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import { VERSION } from "../core/version.ts";
import type { DaemonContext } from "./context.ts";
import { registerErrorHandling } from "./plugins/errors.ts";
import { registerFormBody } from "./plugins/form-body.ts";
import { registerHostGuard } from "./plugins/host-guard.ts";
import { registerPopAuth } from "./plugins/pop-auth.ts";
import { MAX_BODY_BYTES, registerRawBodyJson } from "./plugins/raw-body.ts";
import { agentRoutes } from "./routes/agents.ts";
import { auditRoutes } from "./routes/audit.ts";
import { authSessionRoutes } from "./routes/auth-sessions.ts";
import { browserAuthRoutes } from "./routes/browser-auth.ts";
import { claimRoutes } from "./routes/claim.ts";
import { connectionRoutes } from "./routes/connections.ts";
import { credentialChannelRoute, registerCredentialChannel } from "./routes/credential-channel.ts";
import { credentialRoutes } from "./routes/credentials.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";
import { identityRoutes } from "./routes/identities.ts";
import { oauthCallbackRoutes } from "./routes/oauth-callback.ts";
import { providerRoutes } from "./routes/providers.ts";
import { systemRoutes } from "./routes/system.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** Every route registered, as `METHOD /path` (the OpenAPI completeness test reads it). */
    servedRoutes: string[];
  }
}

export interface BuildAppOptions {
  logger?: Logger | false;
}

/** The composition root for HTTP: plugins, then one plugin per route group. */
export async function buildApp(
  context: DaemonContext,
  options: BuildAppOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: (options.logger || undefined) as FastifyBaseLogger | undefined,
    // Per-request log lines would cost more than the requests; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    // X-Forwarded-* only from the configured proxies: otherwise any client could claim an address
    // (and escape the sign-in limits) or https (and get Secure cookies over http).
    trustProxy: context.config.trustedProxies?.length ? context.config.trustedProxies : false,
    forceCloseConnections: "idle",
    return503OnClosing: true,
  });
  const servedRoutes: string[] = [];
  app.decorate("servedRoutes", servedRoutes);
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) if (method !== "HEAD") servedRoutes.push(`${method} ${route.url}`);
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerRawBodyJson(app);
  registerFormBody(app);
  // Responses finished while closing end their keep-alive connection, so close() does not wait on it.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
    // Long polls would otherwise hold close() for up to their full wait.
    context.authSessions.close();
    await context.oauthLogins.close();
  });
  app.addHook("onSend", async (_request, reply) => {
    if (closing) reply.header("connection", "close");
  });
  registerErrorHandling(app);
  registerHostGuard(app, context.config);
  registerPopAuth(app, context);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "svc daemon",
        version: VERSION,
        description:
          "Local credential daemon. Protected /api routes need `Authorization: PoP <jwt>` (docs/security.md).",
      },
      components: {
        securitySchemes: {
          pop: {
            type: "apiKey",
            in: "header",
            name: "Authorization",
            description: "`PoP <jwt>` signed with the caller's Ed25519 identity",
          },
        },
      },
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifySwaggerUi, { routePrefix: "/docs" });

  app.get(
    "/openapi.json",
    { schema: { summary: "This OpenAPI 3.1 description", tags: ["system"] } },
    async () => app.swagger(),
  );
  await app.register(systemRoutes(context));
  await app.register(identityRoutes(context));
  await app.register(agentRoutes(context));
  await app.register(providerRoutes(context));
  await app.register(connectionRoutes(context));
  await app.register(credentialRoutes(context));
  await app.register(credentialChannelRoute());
  registerCredentialChannel(app, context);
  await app.register(authSessionRoutes(context));
  await app.register(oauthCallbackRoutes(context));
  await app.register(auditRoutes(context));
  await app.register(browserAuthRoutes(context));
  await app.register(claimRoutes(context));
  await app.register(dashboardRoutes(context));
  return app;
}
