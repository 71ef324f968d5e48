import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createStoreFixture, STORE_KINDS, type StoreFixture } from "../../test/support/stores.ts";
import { InvalidInputError, UnexpectedError } from "../core/errors.ts";
import type { Store } from "../store/store.ts";
import {
  AuditLog,
  type AuditLogOptions,
  type AuditQueryOptions,
  DEFAULT_AUDIT_LIMIT,
  MAX_AUDIT_LIMIT,
} from "./audit-log.ts";
import { AUDIT_EVENTS, type AuditEvent, type AuditEventInput, EVENT_ID_PATTERN } from "./events.ts";
import { REFUSED_VALUE } from "./secret-guard.ts";

let fixture: StoreFixture;
let dir: string;
let store: Store;
const logs: AuditLog[] = [];

/** A clock that moves one second per reading, so every event has its own timestamp. */
let clockMs: number;
function now(): Date {
  clockMs += 1000;
  return new Date(clockMs);
}

function auditLog(options: Partial<AuditLogOptions> = {}): AuditLog {
  const log = new AuditLog({ db: store.db, now, ...options });
  logs.push(log);
  return log;
}

const login = (overrides: Partial<AuditEventInput> = {}): AuditEventInput => ({
  event: AUDIT_EVENTS.providerLogin,
  status: "success",
  ...overrides,
});

async function recordLogins(log: AuditLog, count: number, overrides: Partial<AuditEventInput> = {}) {
  return log.recordMany(Array.from({ length: count }, () => login(overrides)));
}

/** Every page of a query, following next_cursor. */
async function allPages(log: AuditLog, options: AuditQueryOptions): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  let cursor: string | undefined;
  do {
    const page = await log.query({ ...options, cursor });
    events.push(...page.events);
    cursor = page.next_cursor;
  } while (cursor);
  return events;
}

const ids = (events: readonly AuditEvent[]) => events.map((event) => event.id);
const newestFirst = (events: readonly AuditEvent[]) => ids(events).reverse();

describe.each(STORE_KINDS)("audit log on %s", (kind) => {
  beforeEach(async () => {
    fixture = await createStoreFixture(kind);
    dir = fixture.dir;
    store = await fixture.open();
    clockMs = Date.parse("2030-01-01T00:00:00.000Z");
  });

  afterEach(async () => {
    for (const log of logs.splice(0)) await log.close();
    await fixture.dispose();
  });

  describe("AuditLog.record", () => {
    it("stores an event with defaults and returns it as stored", async () => {
      const log = auditLog();
      const recorded = await log.record(login({ provider: "github", connection: "default" }));
      expect(recorded).toEqual({
        timestamp: "2030-01-01T00:00:01.000Z",
        event: "provider.login",
        source: "internal",
        status: "success",
        provider: "github",
        connection: "default",
        identity: null,
        principal_id: null,
        id: expect.stringMatching(EVENT_ID_PATTERN),
      });
      expect(recorded.id.startsWith(`evt_${Date.parse(recorded.timestamp)}_`)).toBe(true);
      expect((await log.query()).events).toEqual([recorded]);
    });

    it("keeps the caller's timestamp and detail", async () => {
      const log = auditLog();
      const recorded = await log.record({
        event: AUDIT_EVENTS.proxyRequest,
        status: "success",
        source: "external",
        identity: "brave-otter-1234",
        principal_id: "prn_Ab3dEf6hIj9kLm0n",
        detail: { method: "GET", host: "api.github.com", status_code: 200, cached: false },
        timestamp: new Date("2029-12-31T23:59:59.123Z"),
      });
      expect(recorded).toMatchObject({
        timestamp: "2029-12-31T23:59:59.123Z",
        source: "external",
        detail: { method: "GET", host: "api.github.com", status_code: 200, cached: false },
      });
      expect((await log.query()).events).toEqual([recorded]);
    });

    it("refuses malformed events and stores nothing of the batch", async () => {
      const log = auditLog();
      const bad: AuditEventInput[] = [
        login({ status: "Not OK!" }),
        login({ event: "" }),
        login({ provider: "p".repeat(65) }),
        login({ detail: { nested: {} as unknown as string } }),
        login({ timestamp: new Date(Number.NaN) }),
      ];
      for (const input of bad) {
        await expect(log.recordMany([login(), input])).rejects.toBeInstanceOf(InvalidInputError);
      }
      expect((await log.query()).events).toEqual([]);
    });

    it("names only the top-level field of a bad detail entry, never its key", async () => {
      const log = auditLog();
      const key = `sk-${randomBytes(24).toString("base64url")}`;
      const error = await log.record(login({ detail: { [key]: [] as unknown as string } })).catch((e) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.message).toBe("Invalid audit event: bad detail.");
    });

    it("guards secrets and reports the refused fields, not their values", async () => {
      const refusals: unknown[] = [];
      const log = auditLog({ onRefused: (info) => refusals.push(info) });
      const token = `tok-${randomBytes(16).toString("hex")}`;
      const recorded = await log.record(
        login({ connection: "default", detail: { note: `got ${token}`, password: "x", attempts: 1 } }),
        { secrets: [token] },
      );
      expect(recorded.connection).toBe("default");
      expect(recorded.detail).toEqual({ note: REFUSED_VALUE, password: REFUSED_VALUE, attempts: 1 });
      expect(refusals).toEqual([{ event: "provider.login", fields: ["detail.note", "detail.password"] }]);
      expect((await log.query()).events[0]!.detail).toEqual(recorded.detail);
    });

    it("stores a large batch in one go", async () => {
      const log = auditLog();
      const recorded = await recordLogins(log, 1200);
      expect(recorded).toHaveLength(1200);
      expect(new Set(ids(recorded)).size).toBe(1200);
      expect(await allPages(log, { limit: MAX_AUDIT_LIMIT })).toHaveLength(1200);
    });

    it("refuses to record once closed", async () => {
      const log = auditLog();
      await log.close();
      await expect(log.record(login())).rejects.toBeInstanceOf(UnexpectedError);
    });
  });

  describe("AuditLog.query", () => {
    it("returns the newest events first", async () => {
      const log = auditLog();
      const recorded = [];
      for (const event of [
        AUDIT_EVENTS.providerLogin,
        AUDIT_EVENTS.providerRefreshed,
        AUDIT_EVENTS.providerLogout,
      ]) {
        recorded.push(await log.record({ event, status: "success" }));
      }
      const { events, next_cursor } = await log.query();
      expect(ids(events)).toEqual(newestFirst(recorded));
      expect(next_cursor).toBeUndefined();
    });

    it("orders events of the same instant by id", async () => {
      const instant = new Date("2030-06-01T00:00:00.000Z");
      const log = auditLog();
      const recorded = await recordLogins(log, 30, { timestamp: instant });
      const expected = ids(recorded).sort().reverse();
      expect(ids(await allPages(log, { limit: 7 }))).toEqual(expected);
    });

    it("defaults to 50 events and clamps the limit to 1..500", async () => {
      const log = auditLog();
      await recordLogins(log, 600);
      expect((await log.query()).events).toHaveLength(DEFAULT_AUDIT_LIMIT);
      expect((await log.query({ limit: 0 })).events).toHaveLength(1);
      expect((await log.query({ limit: -5 })).events).toHaveLength(1);
      expect((await log.query({ limit: 7.9 })).events).toHaveLength(7);
      expect((await log.query({ limit: 10_000 })).events).toHaveLength(MAX_AUDIT_LIMIT);
      await expect(log.query({ limit: Number.NaN })).rejects.toBeInstanceOf(InvalidInputError);
    });

    it("pages through old events exactly once while new ones arrive", async () => {
      const log = auditLog();
      const old = await recordLogins(log, 120);
      const seen: AuditEvent[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await log.query({ limit: 25, cursor });
        seen.push(...page.events);
        cursor = page.next_cursor;
        pages++;
        await recordLogins(log, 10, { event: AUDIT_EVENTS.proxyRequest });
      } while (cursor);
      expect(pages).toBe(5);
      expect(ids(seen)).toEqual(newestFirst(old));
      expect((await log.query({ limit: 500 })).events).toHaveLength(170);
    });

    it("gives a last page without a cursor", async () => {
      const log = auditLog();
      await recordLogins(log, 10);
      const first = await log.query({ limit: 5 });
      const second = await log.query({ limit: 5, cursor: first.next_cursor });
      expect(second.events).toHaveLength(5);
      expect(second.next_cursor).toBeUndefined();
    });

    it("shows a principal only its own events", async () => {
      const log = auditLog();
      const mine: AuditEvent[] = [];
      for (let round = 0; round < 20; round++) {
        mine.push(await log.record(login({ principal_id: "prn_mine" })));
        await log.record(login({ principal_id: "prn_theirs" }));
        await log.record(login({ principal_id: null }));
      }
      expect(ids(await allPages(log, { principalId: "prn_mine", limit: 6 }))).toEqual(newestFirst(mine));
      expect(await allPages(log, { principalId: "prn_nobody" })).toEqual([]);
      expect(await allPages(log, { limit: 500 })).toHaveLength(60);
    });

    it("filters by provider and event type", async () => {
      const log = auditLog();
      const githubLogin = await log.record(login({ provider: "github" }));
      const githubLogout = await log.record({
        event: AUDIT_EVENTS.providerLogout,
        status: "success",
        provider: "github",
      });
      const slackLogin = await log.record(login({ provider: "slack" }));
      expect(ids((await log.query({ provider: "github" })).events)).toEqual([
        githubLogout.id,
        githubLogin.id,
      ]);
      expect(ids((await log.query({ event: "provider.login" })).events)).toEqual([
        slackLogin.id,
        githubLogin.id,
      ]);
      expect(ids((await log.query({ provider: "github", event: "provider.login" })).events)).toEqual([
        githubLogin.id,
      ]);
    });

    it("filters by time: since inclusive, until exclusive", async () => {
      const log = auditLog();
      const recorded = await Promise.all(
        ["2030-01-01T00:00:00.000Z", "2030-01-02T00:00:00.000Z", "2030-01-03T00:00:00.000Z"].map((time) =>
          log.record(login({ timestamp: new Date(time) })),
        ),
      );
      const [first, second, third] = recorded.map((event) => event.id);
      const between = (since?: string, until?: string) =>
        log.query({ since, until }).then((page) => ids(page.events));
      expect(await between("2030-01-02T00:00:00.000Z")).toEqual([third, second]);
      expect(await between(undefined, "2030-01-02T00:00:00.000Z")).toEqual([first]);
      expect(await between("2030-01-01T00:00:00Z", "2030-01-03T00:00:00Z")).toEqual([second, first]);
      // Other offsets and plain dates are normalised to the stored UTC form.
      expect(await between("2030-01-02T01:00:00+01:00", "2030-01-03")).toEqual([second]);
      for (const invalid of ["yesterday", "2030-13-01", "1735689600", ""]) {
        await expect(between(invalid)).rejects.toBeInstanceOf(InvalidInputError);
        await expect(between(undefined, invalid)).rejects.toBeInstanceOf(InvalidInputError);
      }
    });

    it("refuses NUL in stored names and in filters alike on every store", async () => {
      const log = auditLog();
      await log.record(login({ provider: "github" }));
      for (const field of ["provider", "connection", "identity", "principal_id"] as const) {
        await expect(log.record(login({ [field]: "a\u0000b" }))).rejects.toBeInstanceOf(InvalidInputError);
      }
      await expect(log.query({ provider: "git\u0000hub" })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(log.query({ event: "provider.login\u0000" })).rejects.toBeInstanceOf(InvalidInputError);
      const stored = await log.record(login({ detail: { note: "with \u0000 inside" } }));
      expect((await log.query({ limit: 1 })).events).toEqual([stored]);
    });

    it("rejects a malformed cursor", async () => {
      const log = auditLog();
      await recordLogins(log, 3);
      const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
      const malformed = [
        "",
        "not a cursor!",
        Buffer.from("garbage").toString("base64url"),
        encode({ timestamp: "2030-01-01T00:00:00.000Z", id: "evt_1893456000000_AAAAAAAAAAAA" }),
        encode(["2030-01-01T00:00:00.000Z"]),
        encode(["yesterday", "evt_1893456000000_AAAAAAAAAAAA"]),
        encode(["2030-01-01T00:00:00.000Z", "' or 1=1 --"]),
      ];
      for (const cursor of malformed) {
        await expect(log.query({ cursor })).rejects.toBeInstanceOf(InvalidInputError);
      }
    });
  });

  describe("AuditLog log file", () => {
    const logPathIn = () => join(dir, "server", "logs", "svc.log");

    function readLines(path: string): Record<string, unknown>[] {
      return readFileSync(path, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    }

    it("appends one JSON line per stored event, internal and external to files of their own, readable only by the owner", async () => {
      const logPath = logPathIn();
      const externalLogPath = join(dir, "server", "logs", "proxy.log");
      const log = auditLog({ logPath, externalLogPath });
      const recorded = [
        await log.record(login({ provider: "github", identity: "brave-otter-1234" })),
        ...(await log.recordMany([
          {
            event: AUDIT_EVENTS.proxyRequest,
            status: "success",
            source: "external",
            detail: { method: "GET" },
          },
          { event: AUDIT_EVENTS.providerRevoked, status: "failure", provider: "github" },
        ])),
      ];
      await log.close();

      const lines = readLines(logPath);
      expect(lines).toEqual([recorded[0], recorded[2]]);
      const externalLines = readLines(externalLogPath);
      expect(externalLines).toEqual([recorded[1]]);
      expect(Object.keys(lines[0]!)).toEqual([
        "timestamp",
        "event",
        "source",
        "status",
        "provider",
        "connection",
        "identity",
        "principal_id",
        "id",
      ]);
      expect(Object.keys(externalLines[0]!).at(-1)).toBe("detail");
      expect(statSync(logPath).mode & 0o777).toBe(0o600);
      expect(statSync(externalLogPath).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, "server", "logs")).mode & 0o777).toBe(0o700);
    });

    it("appends to an existing file across restarts", async () => {
      const logPath = logPathIn();
      const first = auditLog({ logPath });
      await first.record(login());
      await first.close();
      const second = auditLog({ logPath });
      await second.record(login());
      await second.close();
      expect(readLines(logPath)).toHaveLength(2);
    });

    it("leaves no canary in the log file or the database files", async () => {
      const known = `known-${randomBytes(12).toString("hex")}`;
      const canaries = [
        known,
        `ghp_Z9${randomBytes(27).toString("base64url")}`,
        `sk-ant-api03-Z9${randomBytes(30).toString("base64url")}`,
        `AKIA${randomBytes(8).toString("hex").toUpperCase()}`,
        `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.${randomBytes(16).toString("base64url")}`,
        `Z9${randomBytes(30).toString("base64url")}`,
      ];
      const refusals: string[][] = [];
      const log = auditLog({ logPath: logPathIn(), onRefused: (info) => refusals.push(info.fields) });
      // Each fits the 64-character columns, so the guard (not validation) has to stop it.
      for (const [index, canary] of canaries.entries()) {
        await log.record(
          {
            event: AUDIT_EVENTS.credentialResolved,
            status: "success",
            provider: "github",
            connection: `c-${canary}`,
            identity: canary,
            principal_id: canary,
            detail: {
              header: `Bearer ${canary}`,
              client_secret: canary,
              note: canary,
              [`seen_${known}`]: index,
            },
          },
          { secrets: [known] },
        );
      }
      await log.close();
      await fixture.closeStores();

      expect(refusals).toHaveLength(canaries.length);
      const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) =>
        entry.isFile(),
      );
      const expectedFiles = kind === "sqlite" ? ["svc.db", "svc.log"] : ["svc.log"];
      expect(files.map((entry) => entry.name)).toEqual(expect.arrayContaining(expectedFiles));
      const stored = files.map((entry) => ({
        name: entry.name,
        bytes: readFileSync(join(entry.parentPath, entry.name)),
      }));
      // Every row of the database as well (PostgreSQL keeps no file here).
      stored.push({ name: "database rows", bytes: Buffer.from(await fixture.snapshot()) });
      for (const { name, bytes } of stored) {
        for (const canary of canaries) expect(bytes.includes(canary), name).toBe(false);
        expect(bytes.includes("credential.resolved"), name).toBe(true);
      }
    });
  });
});
