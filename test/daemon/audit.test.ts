import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord, ExternalAuditEvent } from "../../src/api/audit.ts";
import { InvalidInputError } from "../../src/core/errors.ts";
import { externalEvent } from "../support/audit-events.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

describe("audit routes", () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon();
  });
  afterAll(async () => {
    await t.stop();
  });

  it("lists the caller's lifecycle events newest first, with identity and principal", async () => {
    await loginWithApiKey(t.client, "openai", `sk-${randomBytes(16).toString("hex")}`);
    const page = await t.client.get<AuditPageRecord>("/api/audit/events?limit=10");
    const [login] = page.events;
    expect(login).toMatchObject({
      event: "provider.login",
      status: "success",
      source: "internal",
      provider: "openai",
      connection: "default",
      identity: t.identity.handle,
      detail: { flow: "api_key", via: "login" },
    });
    expect(login!.principal_id).toMatch(/^prn_/);
    expect(page.events.map((event) => event.event)).toContain("identity.claimed");
  });

  it("stores a proxy batch as external events of the token's identity, never the body's", async () => {
    const batch = [externalEvent(), externalEvent({ status: "failure", detail: { status_code: 401 } })];
    const response = await t.client.post<{ accepted: number }>("/audit/events", { events: batch });
    expect(response).toEqual({ accepted: 2 });
    const page = await t.client.get<AuditPageRecord>("/api/audit/events?event=proxy.request");
    expect(page.events).toHaveLength(2);
    for (const event of page.events) {
      expect(event).toMatchObject({ source: "external", identity: t.identity.handle, provider: "openai" });
    }
    await expect(
      t.client.post("/audit/events", { events: [{ ...externalEvent(), identity: "someone-else-0001" }] }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });

  it("refuses a malformed or oversized batch whole and keeps earlier batches", async () => {
    const before = (await t.client.get<AuditPageRecord>("/api/audit/events?event=proxy.request&limit=500"))
      .events.length;
    const bad = [externalEvent(), externalEvent({ event: "NOT AN EVENT" as ExternalAuditEvent["event"] })];
    await expect(t.client.post("/audit/events", { events: bad })).rejects.toBeInstanceOf(InvalidInputError);
    const huge = Array.from({ length: 501 }, () => externalEvent());
    await expect(t.client.post("/audit/events", { events: huge })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(t.client.post("/audit/events", { events: [] })).rejects.toBeInstanceOf(InvalidInputError);
    const after = (await t.client.get<AuditPageRecord>("/api/audit/events?event=proxy.request&limit=500"))
      .events.length;
    expect(after).toBe(before);
  });

  it("never stores a secret a proxy batch carries, in the database or the log file", async () => {
    const canary = `sk-proj-${randomBytes(24).toString("base64url")}`;
    await t.client.post("/audit/events", {
      events: [externalEvent({ detail: { path: `/v1/echo/${canary}`, note: canary } })],
    });
    const page = await t.client.get<AuditPageRecord>("/api/audit/events?limit=5");
    expect(JSON.stringify(page)).not.toContain(canary);
    expect(readFileSync(t.layout.auditLog, "utf8")).not.toContain(canary);
    expect(readFileSync(t.layout.database).toString("latin1")).not.toContain(canary);
  });

  it("shows a user only their own principal's events, whatever the query says", async () => {
    const user = await t.newUser();
    await loginWithApiKey(user.client, "openai", `sk-${randomBytes(16).toString("hex")}`);
    const mine = await user.client.get<AuditPageRecord>("/api/audit/events?limit=500");
    expect(mine.events.length).toBeGreaterThan(0);
    expect(new Set(mine.events.map((event) => event.principal_id))).toEqual(new Set([user.principalId]));
    const admin = await t.client.get<AuditPageRecord>("/api/audit/events?limit=500");
    const principals = new Set(admin.events.map((event) => event.principal_id));
    expect(principals.has(user.principalId)).toBe(true);
    expect(principals.size).toBeGreaterThan(1);
  });

  it("pages with an opaque cursor and refuses a forged one", async () => {
    const first = await t.client.get<AuditPageRecord>("/api/audit/events?limit=2");
    expect(first.events).toHaveLength(2);
    expect(first.next_cursor).toBeTruthy();
    const second = await t.client.get<AuditPageRecord>(
      `/api/audit/events?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`,
    );
    expect(second.events[0]!.id).not.toBe(first.events[0]!.id);
    expect(second.events[0]!.timestamp <= first.events[1]!.timestamp).toBe(true);
    await expect(t.client.get("/api/audit/events?cursor=forged")).rejects.toBeInstanceOf(InvalidInputError);
  });
});
