import { z } from "zod";

export const AuditEventSchema = z
  .object({
    id: z.string(),
    timestamp: z.string().describe("ISO-8601 UTC."),
    event: z.string().describe("Event type, e.g. provider.login, proxy.request."),
    source: z.enum(["internal", "external"]),
    status: z.string().describe("success, failure, ..."),
    provider: z.string().nullable(),
    connection: z.string().nullable(),
    identity: z.string().nullable(),
    principal_id: z.string().nullable(),
    detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  })
  .meta({ id: "AuditEvent" });
export type AuditEventRecord = z.infer<typeof AuditEventSchema>;

export const AuditPageSchema = z.object({
  events: z.array(AuditEventSchema).describe("Newest first."),
  next_cursor: z.string().optional().describe("Pass as `cursor` for the next (older) page."),
});
export type AuditPageRecord = z.infer<typeof AuditPageSchema>;

export const AuditQuerySchema = z.object({
  limit: z.coerce.number().int().optional().describe("Default 50, clamped to 1..500."),
  cursor: z.string().max(200).optional(),
  provider: z.string().max(64).optional(),
  event: z.string().max(64).optional(),
  identity: z.string().max(64).optional().describe("Only this identity's events (an agent's handle)."),
  since: z.string().max(40).optional().describe("ISO-8601 date or time, inclusive."),
  until: z.string().max(40).optional().describe("ISO-8601 date or time, exclusive."),
});

/** The largest batch the proxy may ship in one request. */
export const MAX_AUDIT_BATCH = 500;

/**
 * The only events a proxy emits. `POST /audit/events` refuses any other name, so a caller cannot
 * forge lifecycle events (`credential.revealed`, `account.signed_in`) into someone's log. A proxy
 * event added later must be added here too.
 */
export const PROXY_AUDIT_EVENTS = ["proxy.request"] as const;

/** How far ahead of the daemon's clock a proxy event may be stamped (clock skew, not more). */
export const MAX_EXTERNAL_EVENT_AHEAD_MS = 5 * 60_000;
/**
 * How old a proxy event may be when it arrives. The proxy's shipper (src/proxy/audit-shipper.ts)
 * queues at most 10,000 events and sends a batch at least every second, one batch in flight,
 * and drops (never retries) a batch the daemon refuses or does not answer: an event waits at
 * most a few minutes even behind a slow daemon. Ten minutes leaves room; older is not a proxy.
 */
export const MAX_EXTERNAL_EVENT_AGE_MS = 10 * 60_000;
/** Proxy events one identity may post per minute (about 500 proxied requests a second). */
export const EXTERNAL_AUDIT_RATE = { max: 30_000, windowMs: 60_000 };

/** One external event as the proxy reports it; who made the call comes from the PoP token. */
export const ExternalAuditEventSchema = z
  .strictObject({
    timestamp: z.iso
      .datetime({ offset: true })
      .describe(
        "When the call was made: at most 5 minutes ahead of the daemon's clock, at most 10 minutes old.",
      ),
    event: z.enum(PROXY_AUDIT_EVENTS).describe("What the proxy saw; only the proxy's own event names."),
    status: z.string().max(32).describe("success (HTTP < 400), failure (HTTP >= 400), error (no answer)."),
    provider: z.string().max(64).nullable().optional(),
    connection: z.string().max(64).nullable().optional(),
    detail: z
      .record(z.string().max(64), z.union([z.string().max(512), z.number(), z.boolean(), z.null()]))
      .optional()
      .describe("method, host, path (never the query), status_code, duration_ms."),
  })
  .meta({ id: "ExternalAuditEvent" });
export type ExternalAuditEvent = z.infer<typeof ExternalAuditEventSchema>;

export const AuditBatchSchema = z.strictObject({
  events: z.array(ExternalAuditEventSchema).min(1).max(MAX_AUDIT_BATCH),
});
export type AuditBatch = z.infer<typeof AuditBatchSchema>;
