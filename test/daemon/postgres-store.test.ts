import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord, ExternalAuditEvent } from "../../src/api/audit.ts";
import type { ResolvedCredential } from "../../src/api/credentials.ts";
import type { Readiness } from "../../src/api/health.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { createStoreFixture, type StoreFixture } from "../support/stores.ts";

/** The daemon on PostgreSQL (SVC_DATABASE_URL), through its HTTP API like any client. */
describe("a daemon whose store is PostgreSQL", () => {
  const password = `pw-CANARY-${randomBytes(6).toString("hex")}`;
  const apiKey = `sk-proj-${randomBytes(16).toString("hex")}`;
  let fixture: StoreFixture;
  let t: TestDaemon;

  beforeAll(async () => {
    fixture = await createStoreFixture("postgres");
    // Trust authentication ignores the password; it is here to prove it never comes back out.
    const url = new URL(fixture.url!);
    url.password = password;
    t = await startTestDaemon({ SVC_DATABASE_URL: url.toString() });
  });
  afterAll(async () => {
    await t?.stop();
    await fixture?.dispose();
  });

  it("is ready, says its store is PostgreSQL, and never shows the password", async () => {
    const response = await t.client.get<Readiness>("/api/ready");
    expect(response.status).toBe("ready");
    expect(Object.values(response.checks).every((value) => value === "ok")).toBe(true);
    expect(response.store_backend).toMatch(
      /^PostgreSQL 127\.0\.0\.1:5432\/test \(schema svc_test_[0-9a-f]+\)$/,
    );
    expect(JSON.stringify(response)).not.toContain(password);
    expect(existsSync(t.layout.database)).toBe(false);
  });

  it("logs in with an API key, resolves it, and audits the login", async () => {
    await loginWithApiKey(t.client, "openai", apiKey);
    const resolved = await t.client.post<ResolvedCredential>("/api/credentials/resolve", {
      host: "api.openai.com",
    });
    expect(resolved.header_value).toBe(`Bearer ${apiKey}`);

    const page = await t.client.get<AuditPageRecord>("/api/audit/events?limit=10");
    expect(page.events[0]).toMatchObject({
      event: "provider.login",
      provider: "openai",
      identity: t.identity.handle,
    });
    expect(page.events.map((event) => event.event)).toContain("identity.claimed");
  });

  it("pages proxy events newest first, exactly once", async () => {
    // A minute ago, on a whole second (five events share each second): the daemon takes recent events only.
    const base = Math.floor((Date.now() - 60_000) / 1000) * 1000;
    const events: ExternalAuditEvent[] = Array.from({ length: 25 }, (_, index) => ({
      timestamp: new Date(base + Math.floor(index / 5) * 1000).toISOString(),
      event: "proxy.request",
      status: "success",
      provider: "openai",
      connection: "default",
      detail: {
        method: "GET",
        host: "api.openai.com",
        path: `/v1/${index}`,
        status_code: 200,
        duration_ms: 1,
      },
    }));
    await t.client.post("/audit/events", { events });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const query = `/api/audit/events?event=proxy.request&limit=4${cursor ? `&cursor=${cursor}` : ""}`;
      const page: AuditPageRecord = await t.client.get<AuditPageRecord>(query);
      seen.push(...page.events.map((event) => `${event.timestamp}|${event.id}`));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    expect(seen).toEqual([...seen].sort().reverse());
  });

  it("keeps credentials encrypted in the database and across a restart", async () => {
    const rows = await fixture.snapshot();
    expect(rows).toContain("vault_entries");
    expect(rows).not.toContain(apiKey);
    expect(rows).not.toContain(apiKey.slice(8));
    t = await t.restart();
    const resolved = await t.client.post<ResolvedCredential>("/api/credentials/resolve", {
      provider: "openai",
    });
    expect(resolved.header_value).toBe(`Bearer ${apiKey}`);
  });
});
