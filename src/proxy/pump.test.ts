import { PassThrough, Readable, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { pump } from "./pump.ts";

function sink(chunks: Buffer[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback();
    },
  });
}

const pumped = (source: Readable, destination: Writable) =>
  new Promise<Error | undefined>((resolve) => pump(source, destination, resolve));

describe("pump", () => {
  it("copies everything and reports success once the destination has finished", async () => {
    const chunks: Buffer[] = [];
    const destination = sink(chunks);
    const error = await pumped(Readable.from([Buffer.from("a"), Buffer.from("b")]), destination);
    expect(error).toBeUndefined();
    expect(destination.writableFinished).toBe(true);
    expect(Buffer.concat(chunks).toString()).toBe("ab");
  });

  it("destroys the destination when the source fails, and reports the error", async () => {
    const source = new PassThrough();
    const destination = sink([]);
    const done = pumped(source, destination);
    source.write("partial");
    source.destroy(new Error("upstream reset"));
    expect((await done)?.message).toBe("upstream reset");
    expect(destination.destroyed).toBe(true);
  });

  it("destroys the source when the destination closes early (the client went away)", async () => {
    const source = new PassThrough();
    const destination = sink([]);
    const done = pumped(source, destination);
    source.write("partial");
    destination.destroy();
    expect(await done).toBeInstanceOf(Error);
    expect(source.destroyed).toBe(true);
  });

  it("reports only once when both sides fail", async () => {
    const source = new PassThrough();
    const destination = sink([]);
    let calls = 0;
    pump(source, destination, () => calls++);
    source.destroy(new Error("one"));
    destination.destroy(new Error("two"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toBe(1);
  });
});
