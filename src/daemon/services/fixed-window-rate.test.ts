import { describe, expect, it } from "vitest";
import { MemoryRuntimeState } from "../../store/runtime-state.ts";
import { FixedWindowRate } from "./fixed-window-rate.ts";

describe("FixedWindowRate", () => {
  it("takes up to max units a window, refuses past it until the next window, and counts keys apart", async () => {
    let nowMs = 1_000_000_000_000;
    const state = new MemoryRuntimeState({ now: () => nowMs });
    const rate = new FixedWindowRate(state, { kind: "test-rate", max: 1_000, windowMs: 60_000 });
    const at = () => new Date(nowMs);
    expect(await rate.charge("a", 600, at())).toBe(0);
    expect(await rate.charge("a", 400, at())).toBe(0);
    nowMs += 15_000;
    // Windows are whole minutes since the epoch: the wait is what is left of this one.
    const windowEnd = Math.ceil(nowMs / 60_000) * 60_000;
    expect(await rate.charge("a", 1, at())).toBe(Math.ceil((windowEnd - nowMs) / 1000));
    expect(await rate.charge("b", 1_000, at())).toBe(0);
    nowMs = windowEnd;
    expect(await rate.charge("a", 1_000, at())).toBe(0);
  });
});
