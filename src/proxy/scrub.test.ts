import { randomBytes } from "node:crypto";
import { type Duplex, Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { PLACEHOLDER, SecretScrubber, scrubbedBody, scrubHeaders } from "./scrub.ts";

const TOKEN = "sk-live-0123456789abcdef";
const BEARER = `Bearer ${TOKEN}`;
const SECRETS = [BEARER, TOKEN];

async function run(transform: Duplex, chunks: readonly Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  await pipeline(Readable.from(chunks), transform, async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) out.push(chunk);
  });
  return Buffer.concat(out);
}

const scrub = (chunks: readonly (string | Buffer)[], secrets: readonly string[] = SECRETS) =>
  run(
    new SecretScrubber(secrets),
    chunks.map((chunk) => Buffer.from(chunk)),
  );

/** `data` cut into pieces of `size` bytes. */
function pieces(data: Buffer, size: number): Buffer[] {
  const result: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) result.push(data.subarray(at, at + size));
  return result;
}

/** Random base64 text: it cannot contain the test secrets, which have a "-". */
const noise = (length: number) => randomBytes(length).toString("base64").slice(0, length);

describe("SecretScrubber", () => {
  it("replaces a secret at the start, in the middle and at the end", async () => {
    expect((await scrub([`${TOKEN} tail`])).toString()).toBe(`${PLACEHOLDER} tail`);
    expect((await scrub([`head ${TOKEN} tail`])).toString()).toBe(`head ${PLACEHOLDER} tail`);
    expect((await scrub([`head ${TOKEN}`])).toString()).toBe(`head ${PLACEHOLDER}`);
    expect((await scrub([TOKEN + TOKEN])).toString()).toBe(PLACEHOLDER + PLACEHOLDER);
  });

  it("replaces several secrets, the longest where they start together", async () => {
    const other = "xoxb-other-secret-value";
    const body = `a ${BEARER} b ${TOKEN} c ${other} d`;
    expect((await scrub([body], [TOKEN, other, BEARER])).toString()).toBe(
      `a ${PLACEHOLDER} b ${PLACEHOLDER} c ${PLACEHOLDER} d`,
    );
    const short = "tok-12345678";
    const long = `${short}-extended`;
    expect((await scrub([`${long} ${short}-ext`], [short, long])).toString()).toBe(
      `${PLACEHOLDER} ${PLACEHOLDER}-ext`,
    );
  });

  it("replaces the leftmost of overlapping secrets", async () => {
    expect((await scrub(["xxAAAABBBBCCCCyy"], ["BBBBCCCC", "AAAABBBB"])).toString()).toBe(
      `xx${PLACEHOLDER}CCCCyy`,
    );
  });

  it("finds a secret split at every byte position across two chunks", async () => {
    const body = `data: {"echo":"${BEARER}"}\n\n`;
    const expected = `data: {"echo":"${PLACEHOLDER}"}\n\n`;
    for (let cut = 0; cut <= body.length; cut++) {
      expect((await scrub([body.slice(0, cut), body.slice(cut)])).toString()).toBe(expected);
    }
  });

  it("finds secrets split across three chunks at every pair of positions", async () => {
    const short = "tok-12345678";
    const long = `${short}-extended`;
    const body = `a ${long} b ${short}-ext c ${short}`;
    const expected = `a ${PLACEHOLDER} b ${PLACEHOLDER}-ext c ${PLACEHOLDER}`;
    for (let first = 0; first <= body.length; first++) {
      for (let second = first; second <= body.length; second++) {
        const chunks = [body.slice(0, first), body.slice(first, second), body.slice(second)];
        expect((await scrub(chunks, [short, long])).toString()).toBe(expected);
      }
    }
  });

  it("finds secrets fed one byte at a time", async () => {
    const body = Buffer.from(`${TOKEN}${BEARER} x ${TOKEN.slice(0, -1)} y ${TOKEN}`);
    const out = await run(new SecretScrubber(SECRETS), pieces(body, 1));
    expect(out.toString()).toBe(`${PLACEHOLDER}${PLACEHOLDER} x ${TOKEN.slice(0, -1)} y ${PLACEHOLDER}`);
  });

  it("scrubs UTF-8 secrets inside binary data split at every position", async () => {
    const secret = "clé-secrète-Ω-0123";
    const bytes = Buffer.from(secret);
    const body = Buffer.concat([Buffer.from([0, 0xff, 0xfe]), bytes, Buffer.from([0x00, 0xc3, 0x80])]);
    const expected = Buffer.concat([
      Buffer.from([0, 0xff, 0xfe]),
      Buffer.from(PLACEHOLDER),
      Buffer.from([0x00, 0xc3, 0x80]),
    ]);
    for (let cut = 0; cut <= body.length; cut++) {
      const out = await run(new SecretScrubber([secret]), [body.subarray(0, cut), body.subarray(cut)]);
      expect(out.equals(expected)).toBe(true);
    }
  });

  it("passes 5 MB of random bytes without a secret through byte for byte", async () => {
    const body = randomBytes(5 * 1024 * 1024);
    for (const secret of SECRETS) expect(body.includes(secret)).toBe(false);
    const chunks: Buffer[] = [];
    for (let at = 0; at < body.length; ) {
      const size = 1 + Math.floor(Math.random() * 70_000);
      chunks.push(body.subarray(at, at + size));
      at += size;
    }
    expect((await run(new SecretScrubber(SECRETS), chunks)).equals(body)).toBe(true);
  });

  it("leaves near misses alone", async () => {
    const body = `${TOKEN.slice(0, -1)}X ${TOKEN.slice(1)} Bearer ${TOKEN.slice(0, 5)} ${TOKEN.slice(0, -1)}`;
    for (let cut = 0; cut <= body.length; cut++) {
      expect((await scrub([body.slice(0, cut), body.slice(cut)])).toString()).toBe(body);
    }
  });

  it("ignores secrets shorter than 8 characters", async () => {
    expect((await scrub(["key=abc1234 and sk-live"], ["abc1234", "sk-live"])).toString()).toBe(
      "key=abc1234 and sk-live",
    );
  });

  it("passes everything through without secrets", async () => {
    expect((await scrub(["a", "b"], [])).toString()).toBe("ab");
  });

  it("emits each chunk before the end, holding back only a possible secret's start", () => {
    const scrubber = new SecretScrubber(SECRETS);
    scrubber.write("event: one\n\n");
    expect(scrubber.read()?.toString()).toBe("event: one\n\n");
    for (let held = 1; held < BEARER.length; held++) {
      scrubber.write(`data: ${BEARER.slice(0, held)}`);
      expect(scrubber.read()?.toString()).toBe("data: ");
      scrubber.write(`${BEARER.slice(held)}\n`);
      expect(scrubber.read()?.toString()).toBe(`${PLACEHOLDER}\n`);
    }
    scrubber.write(`tail ${TOKEN.slice(0, 3)}`);
    expect(scrubber.read()?.toString()).toBe("tail ");
    scrubber.end();
    expect(scrubber.read()?.toString()).toBe(TOKEN.slice(0, 3));
  });

  it("never holds back more than the longest secret's length minus one byte", () => {
    const secret = "aaaaaaaab";
    const scrubber = new SecretScrubber([secret]);
    // Every suffix of a run of "a" is a prefix of the secret.
    scrubber.write("a".repeat(1000));
    expect(scrubber.read()).toHaveLength(1000 - (secret.length - 1));
    scrubber.write("a".repeat(1000));
    expect(scrubber.read()).toHaveLength(1000);
    scrubber.end("b");
    expect(scrubber.read()?.toString()).toBe(PLACEHOLDER);
  });

  it("keeps its buffers bounded when the consumer is slow", async () => {
    const scrubber = new SecretScrubber(SECRETS);
    const chunk = randomBytes(64 * 1024);
    const total = 32 * 1024 * 1024;
    let produced = 0;
    let consumed = 0;
    let inFlight = 0;
    let writable = 0;
    let readable = 0;
    const source = new Readable({
      read() {
        writable = Math.max(writable, scrubber.writableLength);
        if (produced >= total) return void this.push(null);
        produced += chunk.length;
        this.push(chunk);
      },
    });
    const slowSink = new Writable({
      highWaterMark: 16 * 1024,
      write(data: Buffer, _encoding, callback) {
        consumed += data.length;
        inFlight = Math.max(inFlight, produced - consumed);
        readable = Math.max(readable, scrubber.readableLength);
        setImmediate(callback);
      },
    });
    await pipeline(source, scrubber, slowSink);
    expect(consumed).toBe(total);
    expect(writable).toBeLessThanOrEqual(scrubber.writableHighWaterMark + chunk.length);
    expect(readable).toBeLessThanOrEqual(scrubber.readableHighWaterMark + chunk.length);
    expect(inFlight).toBeLessThan(1024 * 1024);
  });
});

const ENCODERS: [string, string, (data: Buffer) => Buffer][] = [
  ["gzip", "gzip", (data) => zlib.gzipSync(data)],
  ["x-gzip", "x-gzip", (data) => zlib.gzipSync(data)],
  ["zlib-wrapped deflate", "deflate", (data) => zlib.deflateSync(data)],
  ["raw deflate", "deflate", (data) => zlib.deflateRawSync(data)],
  [
    "br",
    "br",
    (data) =>
      // Quality 11 (the default) takes a second for a megabyte.
      zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }),
  ],
];

describe("scrubbedBody", () => {
  it.each([undefined, "", "identity", " Identity "])("only scrubs a %j body", async (encoding) => {
    const body = scrubbedBody(encoding, SECRETS);
    expect(body.transform).toBeInstanceOf(SecretScrubber);
    expect(body).toMatchObject({ contentEncoding: undefined, scrubbed: true });
    expect((await run(body.transform, [Buffer.from(`x ${TOKEN}`)])).toString()).toBe(`x ${PLACEHOLDER}`);
  });

  it.each(ENCODERS)("decodes and scrubs a %s body cut into any chunks", async (_name, encoding, encode) => {
    const plain = `{"error":"invalid key ${TOKEN}","header":"${BEARER}"}`;
    const expected = `{"error":"invalid key ${PLACEHOLDER}","header":"${PLACEHOLDER}"}`;
    for (const size of [1, 3, 7, 1000]) {
      const body = scrubbedBody(encoding.toUpperCase(), SECRETS);
      expect(body).toMatchObject({ contentEncoding: undefined, scrubbed: true });
      const out = await run(body.transform, pieces(encode(Buffer.from(plain)), size));
      expect(out.toString()).toBe(expected);
    }
  });

  it.each(ENCODERS)(
    "scrubs secrets across the decoder's output chunks of a large %s body",
    async (_name, encoding, encode) => {
      // zlib emits 16 KiB chunks: put secrets across those boundaries and elsewhere.
      const parts: string[] = [];
      let length = 0;
      for (const at of [100, 16 * 1024 - 5, 32 * 1024 - 20, 48 * 1024 - 1, 200_000, 1_000_000]) {
        parts.push(noise(at - length), at % 2 ? TOKEN : BEARER);
        length = at + (at % 2 ? TOKEN : BEARER).length;
      }
      parts.push(noise(5000));
      const plain = parts.join("");
      const expected = parts.map((part) => (SECRETS.includes(part) ? PLACEHOLDER : part)).join("");
      for (const size of [1500, 64 * 1024]) {
        const out = await run(
          scrubbedBody(encoding, SECRETS).transform,
          pieces(encode(Buffer.from(plain)), size),
        );
        expect(out.toString()).toBe(expected);
      }
    },
  );

  it.each(["gzip", "deflate", "br"])(
    "yields an empty %s body (HEAD, 304) without error",
    async (encoding) => {
      expect(await run(scrubbedBody(encoding, SECRETS).transform, [])).toHaveLength(0);
      expect(await run(scrubbedBody(encoding, SECRETS).transform, [Buffer.alloc(0)])).toHaveLength(0);
    },
  );

  it("emits an error for a corrupt or truncated gzip body", async () => {
    await expect(
      run(scrubbedBody("gzip", SECRETS).transform, [Buffer.from("not gzip at all")]),
    ).rejects.toThrow(/incorrect header check/);
    const truncated = zlib.gzipSync(noise(10_000)).subarray(0, 500);
    await expect(run(scrubbedBody("gzip", SECRETS).transform, [truncated])).rejects.toThrow(/unexpected end/);
  });

  it("emits an error for a corrupt gzip body while the upstream is still sending", async () => {
    const { transform } = scrubbedBody("gzip", SECRETS);
    const failed = new Promise<Error>((resolve) => transform.once("error", resolve));
    transform.resume();
    transform.write(Buffer.from("not gzip at all"));
    expect((await failed).message).toMatch(/incorrect header check/);
  });

  it("keeps a decoded body's buffers bounded when the consumer is slow", async () => {
    const plain = Buffer.from(noise(16 * 1024 * 1024));
    const compressed = zlib.gzipSync(plain, { level: 1 });
    const ratio = compressed.length / plain.length;
    let produced = 0;
    let consumed = 0;
    let inFlight = 0;
    const source = Readable.from(
      (function* () {
        for (const piece of pieces(compressed, 64 * 1024)) {
          produced += piece.length;
          yield piece;
        }
      })(),
    );
    const slowSink = new Writable({
      highWaterMark: 16 * 1024,
      write(data: Buffer, _encoding, callback) {
        consumed += data.length;
        inFlight = Math.max(inFlight, produced / ratio - consumed);
        setImmediate(callback);
      },
    });
    await pipeline(source, scrubbedBody("gzip", SECRETS).transform, slowSink);
    expect(consumed).toBe(plain.length);
    expect(inFlight).toBeLessThan(2 * 1024 * 1024);
  });

  it.each(["gzip, br", "zstd", "compress", "constructor"])(
    "passes a %j body through unscrubbed and says so",
    async (encoding) => {
      const body = scrubbedBody(encoding, SECRETS);
      expect(body).toMatchObject({ contentEncoding: encoding, scrubbed: false });
      const bytes = Buffer.concat([randomBytes(1000), Buffer.from(TOKEN)]);
      expect((await run(body.transform, [bytes])).equals(bytes)).toBe(true);
    },
  );
});

describe("scrubHeaders", () => {
  it("scrubs string and array values, the longest secret first, and copies the headers", () => {
    const headers = {
      "x-echo-authorization": BEARER,
      "x-echo-key": `key=${TOKEN}; again=${TOKEN}`,
      "set-cookie": ["a=1", `token=${TOKEN}`],
      "content-type": "application/json",
      "x-missing": undefined,
    };
    const scrubbed = scrubHeaders(headers, [TOKEN, BEARER]);
    expect(scrubbed).toEqual({
      "x-echo-authorization": PLACEHOLDER,
      "x-echo-key": `key=${PLACEHOLDER}; again=${PLACEHOLDER}`,
      "set-cookie": ["a=1", `token=${PLACEHOLDER}`],
      "content-type": "application/json",
      "x-missing": undefined,
    });
    expect(headers["x-echo-authorization"]).toBe(BEARER);
  });

  it("ignores secrets shorter than 8 characters and treats secrets literally", () => {
    const headers = { a: "abc1234 x", b: "1+1=2 and a.b*c?d$" };
    expect(scrubHeaders(headers, ["abc1234", "a.b*c?d$"])).toEqual({
      a: "abc1234 x",
      b: `1+1=2 and ${PLACEHOLDER}`,
    });
    expect(scrubHeaders({ b: "aXb*c?d$" }, ["a.b*c?d$"])).toEqual({ b: "aXb*c?d$" });
  });
});
