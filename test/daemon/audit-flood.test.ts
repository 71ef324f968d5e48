import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AuditPageRecord, ExternalAuditEvent } from "../../src/api/audit.ts";
import { AuditShipper } from "../../src/proxy/audit-shipper.ts";
import { externalEvent } from "../support/audit-events.ts";
import { loginWithApiKey, signedFetch, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let t: TestDaemon | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

/** Every line of a log and its rotated copies (`svc.log`, `svc.log.1`, ...), parsed. */
function logLines(path: string): Array<{ id: string; event: string; source: string }> {
  const dir = join(path, "..");
  const name = path.slice(dir.length + 1);
  const files = readdirSync(dir).filter((file) => file === name || file.startsWith(`${name}.`));
  return files.flatMap((file) =>
    readFileSync(join(dir, file), "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line)),
  );
}

describe("POST /audit/events accepts only what a proxy could have sent", () => {
  it("refuses event names the proxy never emits, so nobody can forge lifecycle events", async () => {
    t = await startTestDaemon();
    for (const event of ["credential.revealed", "account.signed_in", "identity.claimed", "proxy.anything"]) {
      const refused = await signedFetch(t.daemon.url, t.identity, "POST", "/audit/events", {
        events: [externalEvent({ event: event as ExternalAuditEvent["event"] })],
      });
      expect(refused.status, event).toBe(400);
      expect(refused.body).toMatchObject({ error: "InvalidInputError" });
    }
    const page = await t.client.get<AuditPageRecord>("/api/audit/events?limit=500");
    expect(page.events.filter((event) => event.source === "external")).toEqual([]);
  });

  it("refuses timestamps far in the future (which would top the newest-first log) or older than a proxy queues", async () => {
    t = await startTestDaemon();
    const now = Date.now();
    for (const at of [
      "2100-01-01T00:00:00Z",
      new Date(now + 10 * 60_000).toISOString(),
      new Date(now - 86_400_000).toISOString(),
    ]) {
      const refused = await signedFetch(t.daemon.url, t.identity, "POST", "/audit/events", {
        events: [externalEvent(), externalEvent({ timestamp: at })],
      });
      expect(refused.status, at).toBe(400);
    }
    const slightlyAhead = new Date(now + 60_000).toISOString();
    const accepted = await signedFetch(t.daemon.url, t.identity, "POST", "/audit/events", {
      events: [
        externalEvent({ timestamp: slightlyAhead }),
        externalEvent({ timestamp: new Date(now - 60_000).toISOString() }),
      ],
    });
    expect(accepted.status).toBe(200);
    const page = await t.client.get<AuditPageRecord>("/api/audit/events?limit=500");
    expect(page.events.filter((event) => event.source === "external")).toHaveLength(2);
  });

  it("limits the events one identity may post, with 429 and Retry-After; other identities go on", async () => {
    t = await startTestDaemon();
    const batch = Array.from({ length: 500 }, () => externalEvent());
    let limited: Awaited<ReturnType<typeof signedFetch>> | undefined;
    let accepted = 0;
    for (let i = 0; i < 200 && !limited; i++) {
      const answer = await signedFetch(t.daemon.url, t.identity, "POST", "/audit/events", { events: batch });
      if (answer.status === 429) limited = answer;
      else {
        expect(answer.status).toBe(200);
        accepted += 500;
      }
    }
    expect(limited, "no 429 after 100,000 events").toBeDefined();
    expect(limited!.body).toMatchObject({ error: "RateLimitedError" });
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(accepted).toBeLessThan(100_000);
    const other = await t.newIdentity();
    const answer = await signedFetch(t.daemon.url, other.identity, "POST", "/audit/events", {
      events: [externalEvent()],
    });
    expect(answer.status).toBe(200);
  });
});

describe("svc run's audit shipper against the daemon's rate limit", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("delivers a burst the limit refused once the Retry-After has passed, instead of dropping it", async () => {
    // Only Date is faked (the daemon's windows, PoP times, the shipper's wait); timers and I/O stay real.
    vi.useFakeTimers({ toFake: ["Date"] });
    const minute = 60_000;
    vi.setSystemTime(Math.ceil(Date.now() / minute) * minute + 1_000);
    t = await startTestDaemon();
    const filler = Array.from({ length: 500 }, () => externalEvent());
    let refused: Awaited<ReturnType<typeof signedFetch>> | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const answer = await signedFetch(t.daemon.url, t.identity, "POST", "/audit/events", { events: filler });
      if (answer.status === 429) refused = answer;
    }
    expect(refused, "the identity's allowance for this minute was not used up").toBeDefined();
    const wait = Number(refused!.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(30);

    const client = t.client;
    const sent: number[] = [];
    const shipper = new AuditShipper({
      send: async (events) => {
        sent.push(events.length);
        await client.post("/audit/events", { events });
      },
      batchSize: 200,
      intervalMs: 20,
    });
    const tag = randomBytes(4).toString("hex");
    const burst = Array.from({ length: 450 }, (_, i) =>
      externalEvent({
        // A second after the filler, so the newest page of the log holds the whole burst.
        timestamp: new Date(Date.now() + 1_000).toISOString(),
        detail: { method: "GET", host: "api.openai.com", path: `/burst/${tag}/${i}` },
      }),
    );
    for (const event of burst) shipper.push(event);
    await vi.waitUntil(() => sent.length >= 1, { timeout: 5_000 });
    // Refused and held: nothing more is sent while the daemon's wait lasts.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sent).toEqual([200]);

    vi.setSystemTime(Date.now() + wait * 1000);
    await vi.waitUntil(() => sent.length >= 4, { timeout: 10_000 });
    const report = await shipper.close();
    expect(report).toEqual({ delivered: 450, dropped: 0, rateLimited: true });
    const stored = await t.client.get<AuditPageRecord>("/api/audit/events?limit=500&event=proxy.request");
    const paths = stored.events
      .map((event) => String(event.detail?.path))
      .filter((path) => path.includes(tag));
    expect(paths.sort()).toEqual(burst.map((event) => String(event.detail?.path)).sort());
  });
});

describe("a flood of proxy events cannot push lifecycle events off the disk", () => {
  it("keeps every lifecycle line in svc.log while 100,000 proxy events rotate their own file", async () => {
    t = await startTestDaemon();
    await loginWithApiKey(t.client, "openai", `sk-${randomBytes(16).toString("hex")}`);
    const lifecycle = (await t.client.get<AuditPageRecord>("/api/audit/events?limit=500")).events;
    expect(lifecycle.map((event) => event.event)).toEqual(
      expect.arrayContaining(["identity.claimed", "provider.login"]),
    );

    // Four identities, each within its rate; long paths make each line about 700 bytes (70 MB in all).
    const flooders = [
      t.identity,
      ...(await Promise.all([1, 2, 3].map(() => t!.newIdentity()))).map((x) => x.identity),
    ];
    const path = `/v1/${"x".repeat(480)}`;
    let posted = 0;
    for (let round = 0; round < 50; round++) {
      await Promise.all(
        flooders.map(async (identity) => {
          const events = Array.from({ length: 500 }, (_, i) =>
            externalEvent({ detail: { method: "GET", path: `${path}/${round}/${i}` } }),
          );
          const answer = await signedFetch(t!.daemon.url, identity, "POST", "/audit/events", { events });
          expect(answer.status).toBe(200);
          posted += 500;
        }),
      );
    }
    expect(posted).toBe(100_000);
    await t.close();

    const internal = logLines(t.layout.auditLog);
    const onDisk = new Set(internal.map((line) => line.id));
    for (const event of lifecycle) expect(onDisk.has(event.id), `${event.event} ${event.id}`).toBe(true);
    expect(internal.every((line) => line.source === "internal")).toBe(true);
    const proxyLog = join(t.layout.auditLog, "..", "proxy.log");
    expect(existsSync(proxyLog)).toBe(true);
    expect(readdirSync(join(proxyLog, "..")).some((file) => file.startsWith("proxy.log."))).toBe(true);
  }, 120_000);
});

describe("retention of proxy events in the store", () => {
  it("drops external events older than SVC_AUDIT_EXTERNAL_RETENTION_DAYS at start, and keeps lifecycle events", async () => {
    t = await startTestDaemon({ SVC_AUDIT_EXTERNAL_RETENTION_DAYS: "7" });
    const old = new Date(Date.now() - 8 * 86_400_000);
    const recent = new Date(Date.now() - 6 * 86_400_000);
    await t.daemon.context.audit.recordMany([
      { event: "proxy.request", status: "success", source: "external", timestamp: old },
      { event: "proxy.request", status: "success", source: "external", timestamp: recent },
      { event: "provider.login", status: "success", source: "internal", timestamp: old },
    ]);
    t = await t.restart();
    const events = (await t.client.get<AuditPageRecord>("/api/audit/events?limit=500")).events;
    const externalTimes = events
      .filter((event) => event.source === "external")
      .map((event) => event.timestamp);
    expect(externalTimes).toEqual([recent.toISOString()]);
    expect(events.some((event) => event.source === "internal" && event.timestamp === old.toISOString())).toBe(
      true,
    );
  });
});
