import { describe, expect, it } from "vitest";
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

describe("AttemptLimiter", () => {
  it("waits after max failures until the oldest leaves the window", () => {
    const limiter = new AttemptLimiter({ max: 3, windowMs: 60_000 });
    const at = (s: number) => new Date(1_000_000 + s * 1000);
    for (const s of [0, 10, 20]) {
      expect(limiter.retryAfter("k", at(s))).toBe(0);
      limiter.fail("k", at(s));
    }
    expect(limiter.retryAfter("k", at(21))).toBe(39);
    expect(limiter.retryAfter("other", at(21))).toBe(0);
    expect(limiter.retryAfter("k", at(60))).toBe(0);
    limiter.fail("k", at(61));
    limiter.reset("k");
    expect(limiter.retryAfter("k", at(62))).toBe(0);
  });
});

describe("OneTimeTokens", () => {
  it("gives a value once, before it expires", () => {
    let now = 0;
    const tokens = new OneTimeTokens<string>({ ttlMs: 1000, capacity: 10, now: () => new Date(now) });
    const a = tokens.issue("a");
    expect(a.token).toMatch(/^[\w-]{43}$/);
    expect(tokens.peek(a.token)?.value).toBe("a");
    expect(tokens.take(a.token)).toBe("a");
    expect(tokens.take(a.token)).toBeUndefined();
    const b = tokens.issue("b");
    now = 1000;
    expect(tokens.take(b.token)).toBeUndefined();
  });

  it("forgets the oldest beyond its capacity", () => {
    const tokens = new OneTimeTokens<number>({ ttlMs: 1000, capacity: 2, now: () => new Date(0) });
    const issued = [1, 2, 3].map((n) => tokens.issue(n).token);
    expect(issued.map((token) => tokens.peek(token)?.value)).toEqual([undefined, 2, 3]);
  });
});
