import { describe, expect, it } from "vitest";
import { ProbeCache } from "./probe-cache.ts";

describe("ProbeCache", () => {
  it("shares one probe among concurrent callers and reuses its result until the TTL passes", async () => {
    let now = 1_000;
    let runs = 0;
    const cache = new ProbeCache<number>(() => now);
    const probe = async () => {
      runs += 1;
      return runs;
    };
    const [a, b] = await Promise.all([cache.run("k", 100, probe), cache.run("k", 100, probe)]);
    expect([a, b, runs]).toEqual([1, 1, 1]);
    now += 99;
    expect(await cache.run("k", 100, probe)).toBe(1);
    now += 1;
    expect(await cache.run("k", 100, probe)).toBe(2);
    expect(await cache.run("other", 100, probe)).toBe(3);
  });
});
