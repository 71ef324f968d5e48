import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  AuditBatchSchema,
  AuditPageSchema,
  AuditQuerySchema,
  EXTERNAL_AUDIT_RATE,
  type ExternalAuditEvent,
  MAX_EXTERNAL_EVENT_AGE_MS,
  MAX_EXTERNAL_EVENT_AHEAD_MS,
} from "../../api/audit.ts";
import { errorResponses } from "../../api/errors.ts";
import { InvalidInputError, RateLimitedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { callerScope } from "../services/caller-scope.ts";
import { FixedWindowRate } from "../services/fixed-window-rate.ts";

const errors = errorResponses(400, 401, 403);

/**
 * A proxy stamps an event when it makes the call and ships it within minutes: a time far ahead
 * would sit on top of the newest-first log for good, one far behind is not from a live proxy.
 */
function assertPlausibleTimes(events: readonly ExternalAuditEvent[], now: Date): void {
  for (const event of events) {
    const at = Date.parse(event.timestamp);
    if (at > now.getTime() + MAX_EXTERNAL_EVENT_AHEAD_MS) {
      throw new InvalidInputError(
        `audit event time ${event.timestamp} is more than ${MAX_EXTERNAL_EVENT_AHEAD_MS / 60_000} minutes ahead of the daemon's clock`,
      );
    }
    if (at < now.getTime() - MAX_EXTERNAL_EVENT_AGE_MS) {
      throw new InvalidInputError(
        `audit event time ${event.timestamp} is more than ${MAX_EXTERNAL_EVENT_AGE_MS / 60_000} minutes old`,
      );
    }
  }
}

/** Reading the audit log (role-scoped) and the proxy's event batches. */
export function auditRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  const externalEventRate = new FixedWindowRate(context.runtimeState, {
    kind: "audit-rate",
    ...EXTERNAL_AUDIT_RATE,
  });
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
          description: `Stored as one transaction: a malformed batch is refused whole (400) and nothing of it is stored; earlier batches are untouched. Identity and principal come from the PoP token. Only the proxy's event names, times at most ${MAX_EXTERNAL_EVENT_AHEAD_MS / 60_000} minutes ahead and ${MAX_EXTERNAL_EVENT_AGE_MS / 60_000} minutes old; at most ${EXTERNAL_AUDIT_RATE.max} events per identity per minute (429 with Retry-After).`,
          tags: ["audit"],
          security: [{ pop: [] }],
          body: AuditBatchSchema,
          response: { 200: z.object({ accepted: z.number() }), ...errors, ...errorResponses(429) },
        },
      },
      async (request, reply) => {
        const scope = await callerScope(context, request);
        assertPlausibleTimes(request.body.events, context.now());
        // Counted before anything is stored, per identity: a flood waits, other identities do not.
        const wait = await externalEventRate.charge(
          scope.caller.handle,
          request.body.events.length,
          context.now(),
        );
        if (wait > 0) {
          reply.header("retry-after", String(wait));
          throw new RateLimitedError(
            `this identity sent more than ${EXTERNAL_AUDIT_RATE.max} proxy events this minute; try again in ${wait} s`,
          );
        }
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
