import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AuditBatchSchema, AuditPageSchema, AuditQuerySchema } from "../../api/audit.ts";
import { errorResponses } from "../../api/errors.ts";
import type { DaemonContext } from "../context.ts";
import { callerScope } from "../services/caller-scope.ts";

const errors = errorResponses(400, 401, 403);

/** Reading the audit log (role-scoped) and the proxy's event batches. */
export function auditRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      "/api/audit/events",
      {
        config: { browser: true },
        schema: {
          summary: "Page through audit events, newest first",
          description:
            "An admin sees every event; a user only the events of their own principal, and an identity with a scope only its own, whatever the query says.",
          tags: ["audit"],
          security: [{ pop: [] }],
          querystring: AuditQuerySchema,
          response: { 200: AuditPageSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const { limit, cursor, provider, event, since, until } = request.query;
        // A scoped agent reads its own events only, not its principal's.
        const identity = scope.guard.restricted ? scope.caller.handle : request.query.identity;
        return context.audit.query({
          ...(limit !== undefined ? { limit } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
          ...(provider !== undefined ? { provider } : {}),
          ...(event !== undefined ? { event } : {}),
          ...(identity !== undefined ? { identity } : {}),
          ...(since !== undefined ? { since } : {}),
          ...(until !== undefined ? { until } : {}),
          ...(scope.principal.role === "admin" ? {} : { principalId: scope.principal.id }),
        });
      },
    );

    app.post(
      "/audit/events",
      {
        config: { auth: "pop" },
        schema: {
          summary: "The proxy's batch of external events (PoP)",
          description:
            "Stored as one transaction: a malformed batch is refused whole (400) and nothing of it is stored; earlier batches are untouched. Identity and principal come from the PoP token.",
          tags: ["audit"],
          security: [{ pop: [] }],
          body: AuditBatchSchema,
          response: { 200: z.object({ accepted: z.number() }), ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const stored = await context.audit.recordMany(
          request.body.events.map((event) => ({
            event: event.event,
            status: event.status,
            source: "external" as const,
            provider: event.provider ?? null,
            connection: event.connection ?? null,
            identity: scope.caller.handle,
            principal_id: scope.principal.id,
            timestamp: new Date(event.timestamp),
            ...(event.detail ? { detail: event.detail } : {}),
          })),
        );
        return { accepted: stored.length };
      },
    );
  };
}
