import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Spinner } from "./spinner.ts";

const CLEAR = "\r\x1b[2K";

describe("Spinner", () => {
  let written: string[];
  let spinner: Spinner;
  beforeEach(() => {
    vi.useFakeTimers();
    written = [];
    spinner = new Spinner((text) => written.push(text), { width: 40, intervalMs: 100 });
  });
  afterEach(() => {
    spinner.stop();
    vi.useRealTimers();
  });

  it("redraws its line in place and erases it on stop, once", () => {
    spinner.update("Waiting…");
    expect(written).toEqual([`${CLEAR}⠋ Waiting…`]);
    vi.advanceTimersByTime(250);
    expect(written.slice(1)).toEqual([`${CLEAR}⠙ Waiting…`, `${CLEAR}⠹ Waiting…`]);
    spinner.update("Exchanging…");
    expect(written.at(-1)).toBe(`${CLEAR}⠸ Exchanging…`);
    written.length = 0;
    spinner.stop();
    spinner.stop();
    vi.advanceTimersByTime(1000);
    expect(written).toEqual([CLEAR]);
  });

  it("prints whole lines above the spinner", () => {
    spinner.print("before it starts");
    expect(written).toEqual(["before it starts\n"]);
    spinner.update("Waiting…");
    written.length = 0;
    spinner.print("Enter code WDJB-MJHT at https://example.com/device");
    expect(written).toEqual([
      CLEAR,
      "Enter code WDJB-MJHT at https://example.com/device\n",
      `${CLEAR}⠙ Waiting…`,
    ]);
  });

  it("cuts a text wider than the terminal, since a wrapped line could not be erased", () => {
    spinner.update("x".repeat(60));
    expect(written[0]).toBe(`${CLEAR}⠋ ${"x".repeat(36)}…`);
    expect(written[0]!.length - CLEAR.length).toBeLessThan(40);
  });
});
