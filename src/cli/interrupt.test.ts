import { describe, expect, it } from "vitest";
import { onInterrupt } from "./interrupt.ts";

describe("onInterrupt", () => {
  it("resolves on SIGINT and leaves no listener behind", async () => {
    const before = process.listenerCount("SIGINT");
    const { interrupted, dispose } = onInterrupt();
    expect(process.listenerCount("SIGINT")).toBe(before + 1);
    process.emit("SIGINT");
    await expect(interrupted).resolves.toBeUndefined();
    expect(process.listenerCount("SIGINT")).toBe(before);
    dispose();
    expect(process.listenerCount("SIGINT")).toBe(before);
  });

  it("stops listening when disposed", () => {
    const before = process.listenerCount("SIGINT");
    onInterrupt().dispose();
    expect(process.listenerCount("SIGINT")).toBe(before);
  });
});
