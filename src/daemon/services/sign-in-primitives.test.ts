import { afterAll, describe, expect, it } from "vitest";
import { createRedisFixture, type RedisFixture } from "../../../test/support/redis.ts";
import { MemoryRuntimeState, openRuntimeState, type RuntimeState } from "../../store/runtime-state.ts";
import { AttemptLimiter } from "./attempt-limiter.ts";
import { OneTimeTokens } from "./one-time-tokens.ts";
import { DECOY_HASH, hashPassword, verifyPassword } from "./passwords.ts";

describe("passwords", () => {
  it("verifies the right password only, with a fresh salt per hash", async () => {
    const hash = await hashPassword("a long passphrase");
    expect(hash).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await verifyPassword("a long passphrase", hash)).toBe(true);
    expect(await verifyPassword("a long passphrasE", hash)).toBe(false);
    expect(await hashPassword("a long passphrase")).not.toBe(hash);
  });

  it("treats composed and decomposed accents as the same password", async () => {
    const hash = await hashPassword("caf\u00e9 au lait!");
    expect(await verifyPassword("cafe\u0301 au lait!", hash)).toBe(true);
  });

  it("matches nothing against the decoy or a malformed hash", async () => {
    expect(await verifyPassword("", DECOY_HASH)).toBe(false);
    expect(await verifyPassword("x", "plain-text")).toBe(false);
  });
});

const redisFixtures: RedisFixture[] = [];
afterAll(async () => {
  for (const fixture of redisFixtures) await fixture.dispose();
});

/** Two handles on one runtime state, as two replicas have: the same object in memory, two clients of one Redis. */
const states: Array<[string, () => Promise<[RuntimeState, RuntimeState]>]> = [
  [
    "memory",
    async () => {
      const state = new MemoryRuntimeState();
      return [state, state];
    },
  ],
  [
    "redis",
    async () => {
      const fixture = createRedisFixture();
      redisFixtures.push(fixture);
      return [await openRuntimeState(fixture.env), await openRuntimeState(fixture.env)];
    },
  ],
];

describe.each(states)("AttemptLimiter (%s)", (_kind, open) => {
  it("grants max attempts, counted over replicas, then waits until the oldest leaves the window", async () => {
    const [one, two] = await open();
    const options = { kind: "email", max: 3, windowMs: 60_000 };
    const [a, b] = [new AttemptLimiter(one, options), new AttemptLimiter(two, options)];
    const at = (s: number) => new Date(1_000_000 + s * 1000);
    for (const [s, replica] of [
      [0, a],
      [10, b],
      [20, a],
    ] as const) {
      expect((await replica.reserve("k", at(s))).granted).toBe(true);
    }
    expect(await b.reserve("k", at(21))).toEqual({ granted: false, retryAfter: 39 });
    expect((await a.reserve("other", at(21))).granted).toBe(true);
    // Another kind of limit with the same key counts apart.
    expect(
      (await new AttemptLimiter(one, { ...options, kind: "address" }).reserve("k", at(21))).granted,
    ).toBe(true);
    // A released attempt no longer counts.
    const late = await a.reserve("k", at(60));
    expect(late.granted).toBe(true);
    if (late.granted) await late.release();
    expect((await b.reserve("k", at(61))).granted).toBe(true);
    expect((await b.reserve("k", at(62))).granted).toBe(false);
    await b.reset("k");
    expect((await a.reserve("k", at(62))).granted).toBe(true);
    await one.close();
    if (two !== one) await two.close();
  });

  it("lets at most max of many parallel attempts through", async () => {
    const [one, two] = await open();
    const options = { kind: "email", max: 5, windowMs: 60_000 };
    const [a, b] = [new AttemptLimiter(one, options), new AttemptLimiter(two, options)];
    const now = new Date();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).reserve("parallel", now)),
    );
    expect(results.filter((result) => result.granted)).toHaveLength(5);
    await one.close();
    if (two !== one) await two.close();
  });
});

describe.each(states)("OneTimeTokens (%s)", (_kind, open) => {
  it("gives a value once, on any replica, before it expires", async () => {
    const [one, two] = await open();
    let now = Date.now();
    const clock = () => new Date(now);
    const a = new OneTimeTokens<string>({ state: one, kind: "link", ttlMs: 10_000, now: clock });
    const b = new OneTimeTokens<string>({ state: two, kind: "link", ttlMs: 10_000, now: clock });
    const issued = await a.issue("a");
    expect(issued.token).toMatch(/^[\w-]{43}$/);
    expect((await b.peek(issued.token))?.value).toBe("a");
    const taken = await Promise.all([a.take(issued.token), b.take(issued.token)]);
    expect(taken.filter((value) => value === "a")).toHaveLength(1);
    expect(await a.take(issued.token)).toBeUndefined();
    const later = await a.issue("b");
    now += 10_000;
    expect(await b.take(later.token)).toBeUndefined();
    // Another kind of token never answers for this one.
    const other = new OneTimeTokens<string>({ state: one, kind: "claim", ttlMs: 10_000, now: clock });
    expect(await other.peek((await a.issue("c")).token)).toBeUndefined();
    await one.close();
    if (two !== one) await two.close();
  });
});
