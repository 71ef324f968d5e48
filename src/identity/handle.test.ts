import { describe, expect, it } from "vitest";
import { generateHandle, isValidHandle } from "./handle.ts";

describe("handles", () => {
  it("generates readable adjective-animal-number handles that are valid", () => {
    for (let i = 0; i < 500; i++) {
      const handle = generateHandle();
      expect(handle).toMatch(/^[a-z]+-[a-z]+-[1-9][0-9]{3}$/);
      expect(isValidHandle(handle)).toBe(true);
    }
  });

  it("generates mostly unique handles", () => {
    const handles = new Set(Array.from({ length: 1000 }, () => generateHandle()));
    expect(handles.size).toBeGreaterThan(990);
  });

  it("uses the injected randomness", () => {
    expect(generateHandle(() => 0)).toBe("amber-otter-1000");
    expect(generateHandle((max) => max - 1)).toBe("zesty-yak-9999");
  });

  it("refuses injected randomness outside its range", () => {
    expect(() => generateHandle((max) => max)).toThrow(RangeError);
  });

  it.each(["abc", "amber-otter-4821", "a1b", "agent-7", `a${"b".repeat(63)}`])("accepts %s", (handle) => {
    expect(isValidHandle(handle)).toBe(true);
  });

  it.each([
    "",
    "ab",
    "a",
    "1abc",
    "-abc",
    "abc-",
    "Abc",
    "a.b.c",
    "..",
    "../etc",
    "a/b/c",
    "a\\bc",
    "ab c",
    "abc\n",
    "con",
    "nul",
    "lpt1",
    `a${"b".repeat(64)}`,
  ])("refuses %j", (handle) => {
    expect(isValidHandle(handle)).toBe(false);
  });

  it("refuses values that are not strings", () => {
    expect(isValidHandle(undefined)).toBe(false);
    expect(isValidHandle(42)).toBe(false);
  });
});
