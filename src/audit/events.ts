/**
 * The audit event model: what callers record (`AuditEventInput`) and what is stored and read back
 * (`AuditEvent`). Every input passes `AuditEventInputSchema` and then the secret guard before it
 * is stored; see `audit-log.ts`.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";

/** Internal: credential lifecycle and auth flow steps. External: calls an agent made through the proxy. */
export const AUDIT_SOURCES = ["internal", "external"] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];

/** The event types svc emits. Others (e.g. from newer proxies) are accepted if they are well formed. */
export const AUDIT_EVENTS = {
  providerLogin: "provider.login",
  providerLoginFailed: "provider.login_failed",
  providerLogout: "provider.logout",
  providerRefreshed: "provider.refreshed",
  providerRefreshFailed: "provider.refresh_failed",
  providerRevoked: "provider.revoked",
  providerDefaultChanged: "provider.default_changed",
  providerRegistered: "provider.registered",
  providerRemoved: "provider.removed",
  credentialRevealed: "credential.revealed",
  credentialResolved: "credential.resolved",
  identityClaimed: "identity.claimed",
  accountRegistered: "account.registered",
  /** Someone tried to register an email that already has an account (recorded on that account). */
  accountRegistrationRepeated: "account.registration_repeated",
  accountSignedIn: "account.signed_in",
  accountSignInFailed: "account.sign_in_failed",
  accountSignedOut: "account.signed_out",
  proxyRequest: "proxy.request",
  agentScopeChanged: "agent.scope_changed",
  agentScopeDenied: "agent.scope_denied",
  agentRevoked: "agent.revoked",
} as const;
export type AuditEventType = (typeof AUDIT_EVENTS)[keyof typeof AUDIT_EVENTS];

/** `failure` is what the spec shows for a failed login; other short words are allowed. */
export type AuditStatus = "success" | "failure" | (string & {});

export type AuditDetailValue = string | number | boolean | null;
/** A small object of extra, non-secret fields. */
export type AuditDetail = Record<string, AuditDetailValue>;

export interface AuditEventInput {
  event: AuditEventType | (string & {});
  status: AuditStatus;
  /** Defaults to `internal`. */
  source?: AuditSource;
  provider?: string | null;
  connection?: string | null;
  identity?: string | null;
  principal_id?: string | null;
  detail?: AuditDetail;
  /** Defaults to the log's clock; proxies send the time the call was made. */
  timestamp?: Date;
}

/** A stored event. Its key order is the order of a line in the JSON-lines log file. */
export interface AuditEvent {
  id: string;
  /** ISO-8601 UTC with milliseconds, so text order is time order. */
  timestamp: string;
  event: string;
  source: AuditSource;
  status: string;
  provider: string | null;
  connection: string | null;
  identity: string | null;
  principal_id: string | null;
  detail?: AuditDetail;
}

export const EVENT_NAME_PATTERN = /^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*$/;
export const STATUS_PATTERN = /^[a-z][a-z0-9_]*$/;
export const EVENT_ID_PATTERN = /^evt_\d{13}_[A-Za-z0-9_-]{12}$/;
/** The largest time a 13-digit millisecond id prefix can hold (year 2286). */
const MAX_TIME_MS = 9_999_999_999_999;

/**
 * The column widths of `audit_events` (migration 0002). PostgreSQL text cannot hold NUL, so it
 * is refused on both stores alike (detail values are stored as JSON, where NUL is escaped).
 */
const name = z
  .string()
  .min(1)
  .max(64)
  .refine((value) => !value.includes("\u0000"), "must not contain NUL");

export const AuditEventInputSchema = z.object({
  event: name.regex(EVENT_NAME_PATTERN),
  status: z.string().max(32).regex(STATUS_PATTERN),
  source: z.enum(AUDIT_SOURCES).optional(),
  provider: name.nullish(),
  connection: name.nullish(),
  identity: name.nullish(),
  principal_id: name.nullish(),
  detail: z.record(name, z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  timestamp: z.date().min(new Date(0)).max(new Date(MAX_TIME_MS)).optional(),
});

/** `evt_<ms>_<random>`: ids sort by time, and the random part keeps ids of one millisecond apart. */
export function newEventId(timestamp: Date): string {
  const ms = String(timestamp.getTime()).padStart(13, "0");
  return `evt_${ms}_${randomId()}`;
}

const ID_BYTES = 9;
/** Random bytes drawn a few kilobytes at a time: a proxy batch stores hundreds of events at once. */
let idPool = Buffer.alloc(0);
let idOffset = 0;

function randomId(): string {
  if (idOffset + ID_BYTES > idPool.length) {
    idPool = randomBytes(ID_BYTES * 512);
    idOffset = 0;
  }
  idOffset += ID_BYTES;
  return idPool.toString("base64url", idOffset - ID_BYTES, idOffset);
}
