/**
 * The states of an auth session, without zod: `svc login` reads them at start-up, and loading the
 * wire schemas (zod) would cost every command tens of milliseconds.
 */
export const AUTH_SESSION_STATUSES = [
  "pending",
  "waiting_for_user",
  "processing",
  "completed",
  "failed",
  "expired",
  "cancelled",
] as const;
export type AuthSessionStatus = (typeof AUTH_SESSION_STATUSES)[number];
export const FINAL_STATUSES: ReadonlySet<AuthSessionStatus> = new Set([
  "completed",
  "failed",
  "expired",
  "cancelled",
]);
