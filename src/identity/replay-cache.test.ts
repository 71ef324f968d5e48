import { describe, expect, it } from "vitest";
import { MemoryReplayCache } from "./replay-cache.ts";

function clock(start: number) {
  const state = { now: start };
  return { state, nowSeconds: () => state.now };
}

describe("MemoryReplayCache", () => {
  it("accepts an id the first time and refuses it while it is unexpired", async () => {
    const { nowSeconds } = clock(1000);
    const cache = new MemoryReplayCache({ nowSeconds });
    expect(await cache.remember("a", 1030)).toBe(true);
    expect(await cache.remember("a", 1030)).toBe(false);
    expect(await cache.remember("b", 1030)).toBe(true);
  });

  it("keeps an id for the grace period past its expiry, then forgets it", async () => {
    const { state, nowSeconds } = clock(1000);
    const cache = new MemoryReplayCache({ nowSeconds, graceSeconds: 30 });
    expect(await cache.remember("a", 1030)).toBe(true);
    state.now = 1059;
    expect(await cache.remember("a", 1030)).toBe(false);
    state.now = 1060;
    expect(await cache.remember("a", 1090)).toBe(true);
  });

  it("forgets expired ids by the second, without scanning live ones", async () => {
    const { state, nowSeconds } = clock(1000);
    const cache = new MemoryReplayCache({ nowSeconds, graceSeconds: 0 });
    for (let i = 0; i < 5; i++) await cache.remember(`old-${i}`, 1010);
    for (let i = 0; i < 3; i++) await cache.remember(`later-${i}`, 1020);
    expect(cache.size).toBe(8);
    state.now = 1010;
    await cache.remember("new-0", 1040);
    expect(cache.size).toBe(4);
    expect(await cache.remember("later-0", 1020)).toBe(false);
  });

  it("sustains more than 3 000 tokens a second for longer than a token lives", async () => {
    const { state, nowSeconds } = clock(1000);
    const cache = new MemoryReplayCache({ nowSeconds });
    for (let second = 0; second < 180; second++) {
      state.now = 1000 + second;
      for (let i = 0; i < 3_500; i++) expect(cache.rememberSync(`${second}-${i}`, state.now + 30)).toBe(true);
    }
    expect(cache.size).toBeLessThan(3_500 * 40);
  });

  it("refuses new ids rather than forgetting unexpired ones when full", async () => {
    const { state, nowSeconds } = clock(1000);
    const cache = new MemoryReplayCache({ nowSeconds, maxEntries: 3, graceSeconds: 0 });
    for (const id of ["a", "b", "c"]) expect(await cache.remember(id, 1030)).toBe(true);
    expect(await cache.remember("d", 1030)).toBe(false);
    expect(await cache.remember("a", 1030)).toBe(false);
    state.now = 1030;
    expect(await cache.remember("d", 1060)).toBe(true);
    expect(cache.size).toBe(1);
  });
});
