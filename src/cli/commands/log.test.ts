import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { auditEntriesFromFile, lastLines } from "./log.ts";

describe("lastLines", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "svc-log-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const lines = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, index) => `line ${from + index} ${"é".repeat(7)}`);

  it("reads the end of a file larger than one chunk, whole lines only, oldest first", () => {
    const path = join(dir, "svc.log");
    writeFileSync(path, `${lines(0, 20_000).join("\n")}\n`);
    expect(lastLines(path, 3)).toEqual(lines(19_997, 20_000));
    expect(lastLines(path, 5000)).toEqual(lines(15_000, 20_000));
    expect(lastLines(path, 50_000)).toEqual(lines(0, 20_000));
  });

  it("goes on into the rotated files when the live one has fewer lines", () => {
    const path = join(dir, "svc.log");
    writeFileSync(`${path}.2`, `${lines(0, 3).join("\n")}\n`);
    writeFileSync(`${path}.1`, `${lines(3, 6).join("\n")}\n`);
    writeFileSync(path, `${lines(6, 8).join("\n")}`);
    expect(lastLines(path, 4)).toEqual(lines(4, 8));
    expect(lastLines(path, 100)).toEqual(lines(0, 8));
  });

  it("is empty for a missing file", () => {
    expect(lastLines(join(dir, "none.log"), 10)).toEqual([]);
  });
});

describe("auditEntriesFromFile", () => {
  it("returns the last entries recorded, newest first, skipping lines that are not events", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-audit-file-"));
    try {
      const path = join(dir, "svc.log");
      const event = (index: number) =>
        JSON.stringify({
          id: `evt_${index}`,
          timestamp: `2026-01-01T00:00:0${index}.000Z`,
          event: "provider.login",
        });
      writeFileSync(path, [event(1), event(2), "not json", event(3), '{"torn":'].join("\n"));
      expect(auditEntriesFromFile(path, 2).map((entry) => entry.id)).toEqual(["evt_3", "evt_2"]);
      expect(auditEntriesFromFile(path, 10).map((entry) => entry.id)).toEqual(["evt_3", "evt_2", "evt_1"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
