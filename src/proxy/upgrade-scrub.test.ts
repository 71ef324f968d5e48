import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, expect, it } from "vitest";
import { PLACEHOLDER } from "./scrub.ts";
import { MAX_FRAME_BYTES, UpgradeResponseScrubber } from "./upgrade-scrub.ts";

const TOKEN = "sk-live-0123456789abcdef";
const BEARER = `Bearer ${TOKEN}`;
const SECRETS = [BEARER, TOKEN];
const HEAD = `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nx-echo: ${BEARER}\r\n\r\n`;

interface Frame {
  first: number;
  payload: Buffer;
  mask?: Buffer;
}

function frame({ first, payload, mask }: Frame): Buffer {
  const length = payload.length;
  const extended = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  const header = Buffer.alloc(2 + extended + (mask ? 4 : 0));
  header[0] = first;
  header[1] = (mask ? 0x80 : 0) | (extended === 0 ? length : extended === 2 ? 126 : 127);
  if (extended === 2) header.writeUInt16BE(length, 2);
  if (extended === 8) header.writeBigUInt64BE(BigInt(length), 2);
  if (!mask) return Buffer.concat([header, payload]);
  mask.copy(header, 2 + extended);
  return Buffer.concat([header, Buffer.from(payload.map((byte, i) => byte ^ mask[i & 3]!))]);
}

/** The head and the frames (payloads unmasked) of a scrubbed stream. */
function parse(data: Buffer): { head: string; frames: Frame[] } {
  const end = data.indexOf("\r\n\r\n") + 4;
  const frames: Frame[] = [];
  let at = end;
  while (at < data.length) {
    const first = data[at]!;
    const second = data[at + 1]!;
    let length = second & 0x7f;
    let header = 2;
    if (length === 126) {
      length = data.readUInt16BE(at + 2);
      header = 4;
    } else if (length === 127) {
      length = Number(data.readBigUInt64BE(at + 2));
      header = 10;
    }
    const mask = second & 0x80 ? data.subarray(at + header, at + header + 4) : undefined;
    if (mask) header += 4;
    const sent = data.subarray(at + header, at + header + length);
    frames.push({
      first,
      payload: mask ? Buffer.from(sent.map((byte, i) => byte ^ mask[i & 3]!)) : Buffer.from(sent),
      ...(mask ? { mask: Buffer.from(mask) } : {}),
    });
    at += header + length;
  }
  return { head: data.subarray(0, end).toString("latin1"), frames };
}

async function scrub(input: Buffer, chunkSize = input.length, secrets = SECRETS): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for (let at = 0; at < input.length; at += chunkSize) chunks.push(input.subarray(at, at + chunkSize));
  const out: Buffer[] = [];
  await pipeline(Readable.from(chunks), new UpgradeResponseScrubber(secrets), async (source) => {
    for await (const chunk of source) out.push(chunk as Buffer);
  });
  return Buffer.concat(out);
}

const TEXT = 0x81;
const BINARY = 0x82;
const CLOSE = 0x88;

describe("UpgradeResponseScrubber", () => {
  const frames: Frame[] = [
    { first: TEXT, payload: Buffer.from(JSON.stringify({ authorization: BEARER })) },
    { first: BINARY, payload: randomBytes(300) },
    { first: TEXT, payload: Buffer.from(`${"x".repeat(70_000)}${TOKEN}${"y".repeat(10)}`) },
    { first: TEXT, payload: Buffer.from(`masked ${TOKEN}`), mask: Buffer.from([1, 2, 3, 4]) },
    { first: TEXT, payload: Buffer.from("") },
    { first: CLOSE, payload: Buffer.concat([Buffer.from([0x03, 0xe8]), Buffer.from(`bye ${TOKEN}`)]) },
  ];
  const input = Buffer.concat([Buffer.from(HEAD), ...frames.map(frame)]);
  const expected = frames.map((f) => ({
    ...f,
    payload: Buffer.from(
      f.payload.toString("latin1").replaceAll(BEARER, PLACEHOLDER).replaceAll(TOKEN, PLACEHOLDER),
      "latin1",
    ),
  }));

  it.each([1, 3, 125, 4096, input.length])(
    "scrubs the head and every frame, in chunks of %i bytes",
    async (size) => {
      const { head, frames: out } = parse(await scrub(input, size));
      expect(head).toBe(HEAD.replace(BEARER, PLACEHOLDER));
      expect(out).toEqual(expected);
    },
  );

  it("passes frames without a secret through byte for byte", async () => {
    const clean = Buffer.concat([
      Buffer.from("HTTP/1.1 101 Switching Protocols\r\n\r\n"),
      frame({ first: TEXT, payload: Buffer.from("hello") }),
      frame({ first: BINARY, payload: randomBytes(70_000) }),
      frame({ first: 0x89, payload: Buffer.from("ping") }),
    ]);
    expect((await scrub(clean, 1000)).equals(clean)).toBe(true);
  });

  it("keeps a scrubbed control frame within 125 bytes", async () => {
    // A secret shorter than the placeholder: the reason grows past 125 bytes when replaced.
    const short = "pw-12345";
    const reason = Buffer.concat([Buffer.from([0x03, 0xe8]), Buffer.from(short.repeat(15))]);
    expect(reason.length).toBeLessThanOrEqual(125);
    const input = Buffer.concat([Buffer.from(HEAD), frame({ first: CLOSE, payload: reason })]);
    const [close] = parse(await scrub(input, input.length, [short])).frames;
    expect(close!.payload.length).toBe(125);
    expect(close!.payload.subarray(0, 2)).toEqual(reason.subarray(0, 2));
    expect(close!.payload.toString("latin1")).not.toContain(short);
  });

  it("answers a small frame at once (no waiting for more bytes than the frame has)", async () => {
    const scrubber = new UpgradeResponseScrubber(SECRETS);
    const out: Buffer[] = [];
    scrubber.on("data", (chunk: Buffer) => out.push(chunk));
    const first = frame({ first: TEXT, payload: Buffer.from(TOKEN) });
    scrubber.write(Buffer.concat([Buffer.from(HEAD), first.subarray(0, 1)]));
    scrubber.write(first.subarray(1));
    await new Promise((resolve) => setImmediate(resolve));
    expect(parse(Buffer.concat(out)).frames).toEqual([{ first: TEXT, payload: Buffer.from(PLACEHOLDER) }]);
    scrubber.destroy();
  });

  it("refuses a compressed frame and an oversized one instead of passing them unseen", async () => {
    const compressed = Buffer.concat([Buffer.from(HEAD), frame({ first: 0xc1, payload: Buffer.from("x") })]);
    await expect(scrub(compressed)).rejects.toThrow(/compressed/);
    const header = Buffer.alloc(10);
    header[0] = BINARY;
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(MAX_FRAME_BYTES + 1), 2);
    await expect(scrub(Buffer.concat([Buffer.from(HEAD), header]))).rejects.toThrow(/larger than/);
  });

  it("scrubs the body of an answer other than 101, across chunks", async () => {
    const refused = `HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\r\n{"error":"bad key ${TOKEN}"}`;
    const out = await scrub(Buffer.from(refused), 7);
    expect(out.toString()).toBe(refused.replace(TOKEN, PLACEHOLDER));
  });
});
