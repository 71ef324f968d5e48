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

  it("sweeps expired entries lazily every N inserts", async () => {
    const { state, nowSeconds } = clock(1000);
    const cache = new MemoryReplayCache({ nowSeconds, sweepEvery: 10, graceSeconds: 0 });
    for (let i = 0; i < 5; i++) await cache.remember(`old-${i}`, 1010);
    state.now = 2000;
    for (let i = 0; i < 4; i++) await cache.remember(`new-${i}`, 2030);
    expect(cache.size).toBe(9);
    await cache.remember("new-4", 2030);
    expect(cache.size).toBe(5);
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
