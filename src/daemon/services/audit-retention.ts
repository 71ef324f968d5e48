import type { AuditLog } from "../../audit/audit-log.ts";
import { InvalidInputError } from "../../core/errors.ts";

/** Proxy traffic kept in the store by default; lifecycle (internal) events are kept for good. */
export const DEFAULT_EXTERNAL_RETENTION_DAYS = 30;
/** How often a running daemon drops expired proxy events (and once at start). */
const PRUNE_INTERVAL_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

/** `SVC_AUDIT_EXTERNAL_RETENTION_DAYS`: a positive number of days (fractions allowed). */
export function externalRetentionDays(env: {
  SVC_AUDIT_EXTERNAL_RETENTION_DAYS?: string | undefined;
}): number {
  const raw = env.SVC_AUDIT_EXTERNAL_RETENTION_DAYS?.trim();
  if (!raw) return DEFAULT_EXTERNAL_RETENTION_DAYS;
  const days = Number(raw);
  if (!Number.isFinite(days) || days <= 0) {
    throw new InvalidInputError(
      `SVC_AUDIT_EXTERNAL_RETENTION_DAYS must be a positive number of days (got "${raw}"); unset it for ${DEFAULT_EXTERNAL_RETENTION_DAYS}`,
    );
  }
  return days;
}

/**
 * Keeps the proxy's traffic in the store for a bounded time, so traffic cannot grow the store
 * without bound: prunes now, then every hour until stopped. Replicas may prune concurrently; a
 * delete by time is idempotent.
 */
export async function startExternalRetention(
  audit: AuditLog,
  retentionDays: number,
  now: () => Date,
  onError: (error: unknown) => void,
): Promise<() => void> {
  const prune = () => audit.pruneExternal(new Date(now().getTime() - retentionDays * DAY_MS));
  await prune();
  const timer = setInterval(() => prune().catch(onError), PRUNE_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
