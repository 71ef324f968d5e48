/**
 * Keeps injected secrets from reaching the child: the proxy replaces every occurrence of a secret in
 * an upstream response (an echo endpoint, an error quoting the key) with PLACEHOLDER, in headers and
 * in bodies, streaming. Only literal bytes are matched: a secret the upstream re-encodes (JSON
 * `\u` escapes, percent- or base64-encoding) is not recognised.
 */
import type http from "node:http";
import {
  Duplex,
  PassThrough,
  pipeline,
  Transform,
  type TransformCallback,
  type TransformOptions,
} from "node:stream";
import zlib from "node:zlib";

export const PLACEHOLDER = "svc-proxy-managed";

const PLACEHOLDER_BYTES = Buffer.from(PLACEHOLDER);

/** Shorter values would match ordinary bytes too often to be worth replacing. */
const MIN_SECRET_LENGTH = 8;

interface Searchable {
  strings: string[];
  bytes: Buffer[];
}

/**
 * One request's list of secrets, prepared once for its headers and its body (the same array is
 * passed to both); held only as long as the request holds the array.
 */
const prepared = new WeakMap<readonly string[], Searchable>();

/** The secrets worth searching, distinct, longest first: at one position the longest one wins. */
function searchable(secrets: readonly string[]): Searchable {
  let entry = prepared.get(secrets);
  if (!entry) {
    const strings = [...new Set(secrets)]
      .filter((secret) => secret.length >= MIN_SECRET_LENGTH)
      .sort((a, b) => Buffer.byteLength(b) - Buffer.byteLength(a));
    entry = { strings, bytes: strings.map((secret) => Buffer.from(secret)) };
    prepared.set(secrets, entry);
  }
  return entry;
}

type HeaderValues = Record<string, string | string[] | undefined>;

/** A copy of `headers` with every secret in every value (and array element) replaced. */
export function scrubHeaders<H extends http.IncomingHttpHeaders | HeaderValues>(
  headers: H,
  secrets: readonly string[],
): H {
  const usable = searchable(secrets).strings;
  let pattern: RegExp | undefined;
  const scrub = (value: string) => {
    // Almost no response echoes a secret: the pattern is compiled only for one that does.
    if (!usable.some((secret) => value.includes(secret))) return value;
    // An alternation tries its branches in order, so longest first gives the same leftmost-longest
    // matches as SecretScrubber.
    pattern ??= new RegExp(usable.map(escapeRegExp).join("|"), "g");
    return value.replace(pattern, PLACEHOLDER);
  };
  const scrubbed: HeaderValues = {};
  for (const [name, value] of Object.entries(headers)) {
    scrubbed[name] = Array.isArray(value) ? value.map(scrub) : value === undefined ? value : scrub(value);
  }
  return scrubbed as H;
}

/**
 * A function returning `data` with every secret's UTF-8 bytes replaced by PLACEHOLDER (leftmost,
 * then longest, as SecretScrubber), or `data` itself when none occurs: for whole messages in memory.
 */
export function bufferScrubber(secrets: readonly string[]): (data: Buffer) => Buffer {
  const usable = searchable(secrets).bytes;
  if (usable.length === 0) return (data) => data;
  let pattern: RegExp | undefined;
  return (data) => {
    // Almost no message echoes a secret: the pattern is compiled only for one that does.
    if (!usable.some((secret) => data.includes(secret))) return data;
    // latin1 maps each byte to one character, so this pattern matches the secrets' bytes exactly.
    pattern ??= new RegExp(usable.map((secret) => escapeRegExp(secret.toString("latin1"))).join("|"), "g");
    return Buffer.from(data.toString("latin1").replace(pattern, PLACEHOLDER), "latin1");
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Replaces every occurrence of a secret's UTF-8 bytes with PLACEHOLDER, also across chunk boundaries.
 * Where several secrets match, the leftmost wins, and at one position the longest. Each chunk's
 * output is pushed at once except a tail that could still become a secret (at most the longest
 * secret's length minus one bytes), so server-sent events keep flowing.
 */
export class SecretScrubber extends Transform {
  readonly #secrets: Buffer[];
  #tail: Buffer | undefined;

  constructor(secrets: readonly string[], options?: TransformOptions) {
    super(options);
    this.#secrets = searchable(secrets).bytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    // The tail is rare (the chunk must end in a secret's prefix) and short, so this copy is too.
    const data = this.#tail ? Buffer.concat([this.#tail, chunk]) : chunk;
    this.#tail = undefined;
    this.#scan(data, false);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.#tail) this.#scan(this.#tail, true);
    this.#tail = undefined;
    callback();
  }

  /** Pushes `data` with its secrets replaced, keeping back what might continue in the next chunk. */
  #scan(data: Buffer, final: boolean): void {
    const secrets = this.#secrets;
    const pieces: Buffer[] = [];
    // The next occurrence of each secret at or after `pos`: -1 none, -2 not searched yet.
    const next = secrets.map(() => -2);
    let pos = 0;
    let hold = final ? data.length : this.#partialFrom(data, pos);
    for (;;) {
      let at = -1;
      let which = -1;
      for (let i = 0; i < secrets.length; i++) {
        if (next[i] !== -1 && next[i] < pos) next[i] = data.indexOf(secrets[i], pos);
        // Strictly earlier only: on a tie the first, longer, secret wins.
        if (next[i] >= 0 && (at < 0 || next[i] < at)) {
          at = next[i];
          which = i;
        }
      }
      // A match at or past `hold` might yet lose to a longer or earlier secret completed by the next chunk.
      if (at < 0 || at >= hold) break;
      pieces.push(data.subarray(pos, at), PLACEHOLDER_BYTES);
      pos = at + secrets[which].length;
      if (hold < pos) hold = final ? data.length : this.#partialFrom(data, pos);
    }
    if (hold < data.length) this.#tail = Buffer.from(data.subarray(hold));
    const rest = data.subarray(pos, hold);
    if (pieces.length === 0) {
      if (rest.length > 0) this.push(rest);
      return;
    }
    pieces.push(rest);
    this.push(Buffer.concat(pieces));
  }

  /**
   * The first position at or after `from` where the rest of `data` is a proper prefix of a secret
   * (so it must wait for the next chunk), or data.length. Only the last bytes are searched.
   */
  #partialFrom(data: Buffer, from: number): number {
    let earliest = data.length;
    for (const secret of this.#secrets) {
      const first = secret[0];
      let at = data.indexOf(first, Math.max(from, data.length - secret.length + 1));
      while (at !== -1 && at < earliest) {
        if (data.compare(secret, 0, data.length - at, at) === 0) earliest = at;
        else at = data.indexOf(first, at + 1);
      }
    }
    return earliest;
  }
}

export interface ScrubbedBody {
  /** Upstream body bytes in, scrubbed bytes out. */
  transform: Duplex;
  /** The Content-Encoding of what `transform` emits: undefined (identity) once decoded. */
  contentEncoding: string | undefined;
  /**
   * False for an encoding this cannot decode (unknown, such as zstd, or stacked, such as
   * "gzip, br"): `transform` then passes the bytes through unchanged, and the caller decides.
   */
  scrubbed: boolean;
}

type Decoder = (first: Buffer) => Transform;

// A Map, not an object: a header value such as "constructor" must not find anything.
const DECODERS = new Map<string, Decoder>([
  ["gzip", () => zlib.createGunzip()],
  ["x-gzip", () => zlib.createGunzip()],
  // "deflate" means zlib-wrapped (RFC 9110), but some servers send raw deflate; zlib's starts with 0x78.
  ["deflate", (first) => (first[0] === 0x78 ? zlib.createInflate() : zlib.createInflateRaw())],
  ["br", () => zlib.createBrotliDecompress()],
]);

/** A Content-Encoding as the decoders are keyed: trimmed, lower case, "" for none. */
function encodingName(contentEncoding: string | undefined): string {
  return contentEncoding?.trim().toLowerCase() ?? "";
}

/** Whether a body with this Content-Encoding is its bytes as they are (none, or `identity`). */
export function isIdentityEncoding(contentEncoding: string | undefined): boolean {
  const encoding = encodingName(contentEncoding);
  return encoding === "" || encoding === "identity";
}

/**
 * The body transform for a response with this Content-Encoding. A compressed body is decoded and
 * not re-encoded: the caller sends identity bytes and drops Content-Encoding and Content-Length.
 * Corrupt or truncated compressed data makes `transform` emit an error.
 */
export function scrubbedBody(contentEncoding: string | undefined, secrets: readonly string[]): ScrubbedBody {
  if (isIdentityEncoding(contentEncoding)) {
    return { transform: new SecretScrubber(secrets), contentEncoding: undefined, scrubbed: true };
  }
  const open = DECODERS.get(encodingName(contentEncoding));
  if (!open) return { transform: new PassThrough(), contentEncoding, scrubbed: false };
  return { transform: decodedAndScrubbed(open, secrets), contentEncoding: undefined, scrubbed: true };
}

/**
 * Opens the decoder on the first bytes (deflate needs to see them), and not at all for an empty
 * body, which HEAD and 304 responses have despite their Content-Encoding.
 */
function decodedAndScrubbed(open: Decoder, secrets: readonly string[]): Duplex {
  return Duplex.from(async function* (source: AsyncIterable<Buffer>) {
    const chunks = source[Symbol.asyncIterator]();
    let first = await chunks.next();
    while (!first.done && first.value.length === 0) first = await chunks.next();
    if (first.done) return;
    const head: Buffer = first.value;
    async function* body() {
      yield head;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    }
    // On the first error pipeline destroys every stage with it, and iterating the last one throws it.
    yield* pipeline(body, open(head), new SecretScrubber(secrets), () => {});
  });
}
