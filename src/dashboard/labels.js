// Words for the daemon's codes, shared by the pages.

export const AUTH_TYPES = { api_key: "API key", oauth2: "OAuth 2.0", aws_sigv4: "AWS signature" };

export const FLOWS = {
  api_key: "API key",
  pkce: "Browser sign-in",
  device_code: "Device code",
  dcr_pkce: "Browser sign-in (auto-registered)",
};

/** Connection statuses: what a person reads, and the badge colour. */
export const CONNECTION_STATUS = {
  active: { label: "Connected", kind: "ok", title: "Ready to use" },
  refresh_due: {
    label: "Refresh due",
    kind: "info",
    title: "The access token expired; it is refreshed on next use",
  },
  expired: { label: "Expired", kind: "warn", title: "Expired and cannot be refreshed: connect again" },
  refresh_failed: {
    label: "Refresh failed",
    kind: "danger",
    title: "The provider refused the last refresh: connect again",
  },
};

/** The audit event types svc records (src/audit/events.ts), for the filter. */
export const AUDIT_EVENTS = [
  "provider.login",
  "provider.login_failed",
  "provider.logout",
  "provider.refreshed",
  "provider.refresh_failed",
  "provider.revoked",
  "provider.default_changed",
  "provider.registered",
  "provider.removed",
  "credential.revealed",
  "credential.resolved",
  "identity.claimed",
  "account.registered",
  "account.signed_in",
  "account.sign_in_failed",
  "account.signed_out",
  "proxy.request",
  "agent.scope_changed",
  "agent.scope_denied",
  "agent.revoked",
];

/** Audit statuses: badge colour. */
export function auditStatusKind(status) {
  if (status === "success") return "ok";
  if (status === "failure" || status === "error") return "danger";
  return "info";
}
