import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { hashBodyUpTo } from "./body-buffer.ts";

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

describe("hashBodyUpTo", () => {
  it("hashes a body within the limit and sends it unchanged", async () => {
    const hashed = await hashBodyUpTo(Readable.from([Buffer.from("ab"), Buffer.from("cd")]), 4);
    expect(hashed.sha256).toBe(sha256("abcd"));
    expect(await text(hashed.body)).toBe("abcd");
  });

  it("hashes an empty body", async () => {
    const hashed = await hashBodyUpTo(Readable.from([]), 4);
    expect(hashed.sha256).toBe(sha256(""));
    expect(await text(hashed.body)).toBe("");
  });

  it("stops hashing past the limit and streams the whole body on", async () => {
    const chunks = ["abc", "def", "ghi", "jkl"].map((part) => Buffer.from(part));
    const hashed = await hashBodyUpTo(Readable.from(chunks), 4);
    expect(hashed.sha256).toBeUndefined();
    expect(await text(hashed.body)).toBe("abcdefghijkl");
  });

  it("rejects when the body breaks off", async () => {
    const source = new Readable({ read() {} });
    const pending = hashBodyUpTo(source, 100);
    source.push("partial");
    source.destroy(new Error("aborted"));
    await expect(pending).rejects.toThrow("aborted");
  });
});
