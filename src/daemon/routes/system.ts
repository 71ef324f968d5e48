import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { ErrorBodySchema } from "../../api/errors.ts";
import { HealthSchema, ReadinessSchema, WhoamiSchema } from "../../api/health.ts";
import { VERSION } from "../../core/version.ts";
import type { DaemonContext } from "../context.ts";
import { callerOf } from "../plugins/pop-auth.ts";
import { principalFields } from "../services/principals.ts";
import { encryptionFields, evaluateReadiness } from "../services/readiness.ts";

const POP = [{ pop: [] }];

/** Health, readiness and whoami: what a client asks before anything else. */
export function systemRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      "/api/health",
      {
        config: { auth: "none" },
        schema: {
          summary: "Liveness probe (no authentication)",
          tags: ["system"],
          response: { 200: HealthSchema },
        },
      },
      async () => ({
        status: "ok" as const,
        version: VERSION,
        instance_id: context.instanceId,
        ...encryptionFields(context),
      }),
    );

    app.get(
      "/api/ready",
      {
        config: { replayOptional: true },
        schema: {
          summary: "Readiness of store, vault, identity, providers and connections for the caller",
          tags: ["system"],
          security: POP,
          response: { 200: ReadinessSchema, 401: ErrorBodySchema },
        },
      },
      async (request) => evaluateReadiness(context, callerOf(request)),
    );

    app.get(
      "/api/whoami",
      {
        schema: {
          summary: "The calling identity, its principal and vault",
          tags: ["system"],
          security: POP,
          response: { 200: WhoamiSchema, 401: ErrorBodySchema },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const principal = caller.principalId ? await context.principals.get(caller.principalId) : undefined;
        return {
          home: context.layout.home,
          identity: caller.handle,
          did: caller.did,
          ...principalFields(principal),
        };
      },
    );
  };
}
