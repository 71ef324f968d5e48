import type { ExternalAuditEvent } from "../../src/api/audit.ts";

/** A `proxy.request` event as a `svc run` proxy ships it, made now; `overrides` change any field. */
export function externalEvent(overrides: Partial<ExternalAuditEvent> = {}): ExternalAuditEvent {
  return {
    timestamp: new Date().toISOString(),
    event: "proxy.request",
    status: "success",
    provider: "openai",
    connection: "default",
    detail: { method: "GET", host: "api.openai.com", path: "/v1/models", status_code: 200, duration_ms: 12 },
    ...overrides,
  };
}
