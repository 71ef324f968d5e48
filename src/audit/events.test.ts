import { describe, expect, it } from "vitest";
import { newEventId } from "./events.ts";

describe("newEventId", () => {
  it("gives distinct ids of one shape, also across refills of its random pool", () => {
    const at = new Date("2026-11-23T12:00:00.000Z");
    const ids = Array.from({ length: 2_000 }, () => newEventId(at));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^evt_1795435200000_[A-Za-z0-9_-]{12}$/);
  });
});
