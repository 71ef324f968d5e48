import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { createRedisFixture, type RedisFixture } from "../../test/support/redis.ts";
import { SharedStateUnavailableError } from "../core/errors.ts";
import { openRedisState } from "./redis-state.ts";
import { MemoryRuntimeState, openRuntimeState, type RuntimeState } from "./runtime-state.ts";

const fixtures: RedisFixture[] = [];
afterAll(async () => {
  for (const fixture of fixtures) await fixture.dispose();
});

const kinds: Array<[string, () => Promise<RuntimeState>]> = [
  ["memory", async () => new MemoryRuntimeState()],
  [
    "redis",
    async () => {
      const fixture = createRedisFixture();
      fixtures.push(fixture);
      return openRuntimeState(fixture.env);
    },
  ],
];

describe.each(kinds)("RuntimeState contract (%s)", (kind, open) => {
  let state: RuntimeState;
  beforeEach(async () => {
    state = await open();
  });
  afterEach(async () => {
    await state.close();
  });

  it("reports its kind", () => {
    expect(state.kind).toBe(kind);
  });

  it("keeps a value until its time to live runs out", async () => {
    await state.set("k", "v", 150);
    expect(await state.get("k")).toBe("v");
    await sleep(250);
    expect(await state.get("k")).toBeUndefined();
  });

  it("sets only when absent with ifAbsent, once of many concurrent tries", async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) => state.set("once", String(index), 5_000, { ifAbsent: true })),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await state.set("once", "again", 5_000, { ifAbsent: true })).toBe(false);
    expect(await state.set("once", "forced", 5_000)).toBe(true);
    expect(await state.get("once")).toBe("forced");
  });

  it("swaps only while the value is the expected one", async () => {
    await state.set("s", "a", 5_000);
    expect(await state.swap("s", "b", "c", 5_000)).toBe(false);
    expect(await state.swap("s", "a", "b", 5_000)).toBe(true);
    expect(await state.get("s")).toBe("b");
    expect(await state.swap("missing", "a", "b", 5_000)).toBe(false);
    expect(await state.get("missing")).toBeUndefined();
  });

  it("hands a taken value to exactly one of several takers", async () => {
    await state.set("t", "secret-link", 5_000);
    const taken = await Promise.all(Array.from({ length: 10 }, () => state.take("t")));
    expect(taken.filter((value) => value === "secret-link")).toHaveLength(1);
    expect(await state.get("t")).toBeUndefined();
  });

  it("deletes, and with an expected value only while it matches (a lock's owner)", async () => {
    await state.set("lock", "owner-1", 5_000);
    expect(await state.delete("lock", "owner-2")).toBe(false);
    expect(await state.get("lock")).toBe("owner-1");
    expect(await state.delete("lock", "owner-1")).toBe(true);
    expect(await state.delete("lock")).toBe(false);
  });

  it("counts events in a sliding window, also two in the same millisecond", async () => {
    const t0 = Date.now();
    expect(await state.reserveEvent("ev", t0, 1_000, 10)).toBeTruthy();
    expect(await state.reserveEvent("ev", t0, 1_000, 10)).toBeTruthy();
    expect(await state.reserveEvent("ev", t0 + 600, 1_000, 10)).toBeTruthy();
    expect(await state.events("ev", t0 + 700, 1_000)).toEqual([t0, t0, t0 + 600]);
    expect(await state.events("ev", t0 + 1_100, 1_000)).toEqual([t0 + 600]);
    expect(await state.events("other", t0, 1_000)).toEqual([]);
    expect(await state.delete("ev")).toBe(true);
    expect(await state.events("ev", t0 + 700, 1_000)).toEqual([]);
  });

  it("reserves at most `max` events in a window, atomically, and forgets one on request", async () => {
    const t0 = Date.now();
    const ids = await Promise.all(Array.from({ length: 20 }, () => state.reserveEvent("rv", t0, 1_000, 3)));
    const granted = ids.filter((id): id is string => id !== undefined);
    expect(granted).toHaveLength(3);
    expect(new Set(granted).size).toBe(3);
    await state.removeEvent("rv", granted[0]!);
    expect(await state.events("rv", t0, 1_000)).toHaveLength(2);
    expect(await state.reserveEvent("rv", t0, 1_000, 3)).toBeTruthy();
    expect(await state.reserveEvent("rv", t0, 1_000, 3)).toBeUndefined();
    expect(await state.reserveEvent("rv", t0 + 1_001, 1_000, 3)).toBeTruthy();
  });

  it("increments a counter atomically, which expires with the time to live it was created with", async () => {
    const totals = await Promise.all(Array.from({ length: 10 }, () => state.increment("count", 3, 300)));
    expect(totals.sort((a, b) => a - b)).toEqual([3, 6, 9, 12, 15, 18, 21, 24, 27, 30]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await state.increment("count", 1, 300)).toBe(1);
  });

  it("delivers published messages to subscribers until they unsubscribe", async () => {
    const seen: string[] = [];
    const unsubscribe = await state.subscribe("news", (message) => seen.push(message));
    await state.publish("news", "one");
    await state.publish("elsewhere", "not for us");
    await expect.poll(() => seen).toEqual(["one"]);
    unsubscribe();
    await state.publish("news", "two");
    await sleep(50);
    expect(seen).toEqual(["one"]);
  });

  it("answers a ping", async () => {
    await expect(state.ping()).resolves.toBeUndefined();
  });
});

describe("RuntimeState on Redis", () => {
  it("shares values and messages between two daemons' connections", async () => {
    const fixture = createRedisFixture();
    fixtures.push(fixture);
    const [a, b] = [await openRuntimeState(fixture.env), await openRuntimeState(fixture.env)];
    try {
      const seen: string[] = [];
      await b.subscribe("changed", (message) => seen.push(message));
      await a.set("shared", "from a", 5_000);
      expect(await b.get("shared")).toBe("from a");
      await a.publish("changed", "shared");
      await expect.poll(() => seen).toEqual(["shared"]);
      expect(await fixture.keys()).toEqual(["shared"]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("keeps deployments with different prefixes apart", async () => {
    const [one, two] = [createRedisFixture(), createRedisFixture()];
    fixtures.push(one, two);
    const [a, b] = [await openRuntimeState(one.env), await openRuntimeState(two.env)];
    try {
      await a.set("k", "one", 5_000);
      expect(await b.get("k")).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("refuses to start when Redis cannot be reached, naming the server but not the password", async () => {
    const attempt = openRedisState({ url: "redis://svc:hunter2-canary@127.0.0.1:1" });
    await expect(attempt).rejects.toBeInstanceOf(SharedStateUnavailableError);
    await expect(attempt).rejects.toThrow(/127\.0\.0\.1:1\/0/);
    await expect(attempt).rejects.not.toThrow(/hunter2-canary/);
  });

  it("refuses a URL that is not redis:// or rediss://", async () => {
    await expect(openRuntimeState({ SVC_REDIS_URL: "http://127.0.0.1:6379" })).rejects.toThrow(
      /must start with redis:\/\/ or rediss:\/\//,
    );
  });
});

describe("MemoryRuntimeState", () => {
  it("refuses new entries of a kind beyond its cap, while other kinds still fit", async () => {
    const state = new MemoryRuntimeState({ maxEntriesPerKind: 3 });
    for (const key of ["claim:a", "claim:b", "claim:c"]) await state.set(key, "v", 60_000);
    await expect(state.set("claim:d", "v", 60_000)).rejects.toThrow(/too many claim entries/);
    // An existing key can still change, and a flood of claims leaves room for logins.
    await expect(state.set("claim:a", "w", 60_000)).resolves.toBe(true);
    await expect(state.set("auth-session:x", "v", 60_000)).resolves.toBe(true);
    // Taking or deleting one frees its room.
    expect(await state.take("claim:b")).toBe("v");
    await expect(state.set("claim:d", "v", 60_000)).resolves.toBe(true);
  });

  it("frees the room of expired entries", async () => {
    let now = 0;
    const state = new MemoryRuntimeState({ maxEntriesPerKind: 2, now: () => now });
    await state.set("k:a", "v", 1_000);
    await state.set("k:b", "v", 1_000);
    now = 2_000;
    expect(await state.get("k:a")).toBeUndefined();
    await expect(state.set("k:c", "v", 1_000)).resolves.toBe(true);
  });
});
