/**
 * Keeps injected secrets out of what an upgraded connection (a WebSocket) sends the child, as
 * scrub.ts does for plain responses: the upstream's response head is scrubbed, and after a 101 each
 * WebSocket frame from the upstream is read whole and passed on with its payload scrubbed (and its
 * length rewritten). Payloads must be literal bytes, so the proxy withholds the client's
 * Sec-WebSocket-Extensions offer (no permessage-deflate); a compressed (RSV1) frame, or one larger
 * than MAX_FRAME_BYTES, ends the connection rather than pass unseen. A secret split across the
 * frames of a fragmented message is not recognised. An answer other than 101 is plain HTTP: its
 * body goes through SecretScrubber.
 */
import { Transform, type TransformCallback } from "node:stream";
import { bufferScrubber, SecretScrubber } from "./scrub.ts";

/** The largest frame held in memory to be scrubbed. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;
const MAX_HEAD_BYTES = 64 * 1024;
const HEAD_END = Buffer.from("\r\n\r\n");
/** Control frames (close, ping, pong) carry at most 125 bytes (RFC 6455 section 5.5). */
const MAX_CONTROL_PAYLOAD = 125;

function xor(payload: Buffer, mask: Buffer): Buffer {
  const out = Buffer.allocUnsafe(payload.length);
  for (let i = 0; i < payload.length; i++) out[i] = payload[i]! ^ mask[i & 3]!;
  return out;
}

/** A frame with the first byte (FIN, RSV, opcode) of the original and a new payload. */
function encodeFrame(first: number, payload: Buffer, mask: Buffer | undefined): Buffer {
  const length = payload.length;
  const extended = length < 126 ? 0 : length < 65_536 ? 2 : 8;
  const header = Buffer.alloc(2 + extended + (mask ? 4 : 0));
  header[0] = first;
  header[1] = (mask ? 0x80 : 0) | (extended === 0 ? length : extended === 2 ? 126 : 127);
  if (extended === 2) header.writeUInt16BE(length, 2);
  else if (extended === 8) header.writeBigUInt64BE(BigInt(length), 2);
  if (!mask) return Buffer.concat([header, payload]);
  mask.copy(header, 2 + extended);
  return Buffer.concat([header, xor(payload, mask)]);
}

/** Upstream bytes of an upgraded connection in, the same with every secret replaced out. */
export class UpgradeResponseScrubber extends Transform {
  readonly #secrets: readonly string[];
  readonly #scrub: (data: Buffer) => Buffer;
  #mode: "head" | "frames" | "body" = "head";
  #chunks: Buffer[] = [];
  #buffered = 0;
  /** How many bytes the next step needs (a complete head, frame header or frame). */
  #needed = 1;
  #body: SecretScrubber | undefined;

  constructor(secrets: readonly string[]) {
    super();
    this.#secrets = secrets;
    this.#scrub = bufferScrubber(secrets);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#body) {
      this.#body.write(chunk, () => callback());
      return;
    }
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    if (this.#buffered < this.#needed) {
      callback();
      return;
    }
    const data = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    this.#chunks = [];
    this.#buffered = 0;
    try {
      this.#consume(data);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    if (this.#body) {
      this.#body.once("end", () => callback());
      this.#body.end();
      return;
    }
    // An incomplete head is passed on scrubbed; an incomplete frame is useless to the child.
    if (this.#mode === "head" && this.#buffered > 0) this.push(this.#scrub(Buffer.concat(this.#chunks)));
    callback();
  }

  #keep(rest: Buffer, needed: number): void {
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    this.#needed = needed;
  }

  #consume(data: Buffer): void {
    let offset = 0;
    if (this.#mode === "head") {
      const end = data.indexOf(HEAD_END);
      if (end < 0) {
        if (data.length > MAX_HEAD_BYTES)
          throw new Error("the upstream's upgrade response head is too large");
        this.#keep(data, data.length + 1);
        return;
      }
      offset = end + HEAD_END.length;
      const head = data.subarray(0, offset);
      this.push(this.#scrub(head));
      if (!/^HTTP\/1\.[01] 101[ \r]/.test(head.toString("latin1", 0, 16))) {
        const body = new SecretScrubber(this.#secrets);
        body.on("data", (chunk: Buffer) => this.push(chunk));
        this.#body = body;
        if (offset < data.length) body.write(data.subarray(offset));
        this.#keep(Buffer.alloc(0), 1);
        return;
      }
      this.#mode = "frames";
    }
    // Unchanged frames go on as they came, in one piece with their neighbours.
    let unsent = offset;
    this.#needed = 2;
    for (;;) {
      const available = data.length - offset;
      if (available < 2) break;
      const first = data[offset]!;
      const second = data[offset + 1]!;
      let length = second & 0x7f;
      let header = 2;
      if (length === 126) {
        header = 4;
        if (available < header) {
          this.#needed = header;
          break;
        }
        length = data.readUInt16BE(offset + 2);
      } else if (length === 127) {
        header = 10;
        if (available < header) {
          this.#needed = header;
          break;
        }
        const long = data.readBigUInt64BE(offset + 2);
        length = long > BigInt(MAX_FRAME_BYTES) ? Number.POSITIVE_INFINITY : Number(long);
      }
      if (length > MAX_FRAME_BYTES)
        throw new Error(`a WebSocket frame larger than ${MAX_FRAME_BYTES} bytes cannot be inspected`);
      if (first & 0x40) throw new Error("a compressed WebSocket frame cannot be inspected");
      const masked = (second & 0x80) !== 0;
      if (masked) header += 4;
      if (available < header + length) {
        this.#needed = header + length;
        break;
      }
      const mask = masked ? data.subarray(offset + header - 4, offset + header) : undefined;
      const sent = data.subarray(offset + header, offset + header + length);
      const payload = mask ? xor(sent, mask) : sent;
      let scrubbed = this.#scrub(payload);
      if (scrubbed !== payload) {
        if ((first & 0x0f) >= 8) scrubbed = scrubbed.subarray(0, MAX_CONTROL_PAYLOAD);
        if (unsent < offset) this.push(data.subarray(unsent, offset));
        this.push(encodeFrame(first, scrubbed, mask));
        unsent = offset + header + length;
      }
      offset += header + length;
      this.#needed = 2;
    }
    if (unsent < offset) this.push(data.subarray(unsent, offset));
    this.#keep(data.subarray(offset), this.#needed);
  }
}
