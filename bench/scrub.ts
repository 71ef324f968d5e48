/**
 * `node bench/scrub.ts`: throughput of the proxy's response scrubber. Streams 256 MB of random bytes
 * in 64 KiB chunks through a plain PassThrough and through a SecretScrubber with two secrets (a key
 * and its `Bearer` header value), and 64 MB of gzip-compressed text through gzip decoding plus
 * scrubbing; prints the medians of BENCH_RUNS (default 5) runs in MB/s (10^6 bytes) as JSON.
 */
import { randomBytes } from "node:crypto";
import { type Duplex, PassThrough, Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import zlib from "node:zlib";
import { SecretScrubber, scrubbedBody } from "../src/proxy/scrub.ts";
import { quantile, round } from "./stats.ts";

const CHUNK = 64 * 1024;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const KEY = `sk-${randomBytes(48).toString("base64url")}`;
const SECRETS = [`Bearer ${KEY}`, KEY];

function pieces(data: Buffer): Buffer[] {
  const result: Buffer[] = [];
  for (let at = 0; at < data.length; at += CHUNK) result.push(data.subarray(at, at + CHUNK));
  return result;
}

/** MB/s of output bytes, `chunks` written through `transform` into a sink that discards them. */
async function throughput(transform: Duplex, chunks: readonly Buffer[]): Promise<number> {
  let bytes = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      callback();
    },
  });
  const started = performance.now();
  await pipeline(Readable.from(chunks), transform, sink);
  return bytes / 1e6 / ((performance.now() - started) / 1000);
}

const median = (samples: number[]) =>
  quantile(
    [...samples].sort((a, b) => a - b),
    0.5,
  );

const plain = pieces(randomBytes(256 * 1024 * 1024));
const text = randomBytes(48 * 1024 * 1024).toString("base64");
const gzipped = pieces(zlib.gzipSync(text));

const samples = { passthrough: [] as number[], scrub: [] as number[], gzip: [] as number[] };
// The first round warms up the JIT and is not counted; the cases alternate so drift hits all alike.
for (let run = 0; run <= RUNS; run++) {
  const passthrough = await throughput(new PassThrough(), plain);
  const scrub = await throughput(new SecretScrubber(SECRETS), plain);
  const gzip = await throughput(scrubbedBody("gzip", SECRETS).transform, gzipped);
  if (run === 0) continue;
  samples.passthrough.push(passthrough);
  samples.scrub.push(scrub);
  samples.gzip.push(gzip);
}

const passthrough = median(samples.passthrough);
const scrub = median(samples.scrub);
console.log(
  JSON.stringify({
    passthrough_mb_s: round(passthrough),
    scrub_mb_s: round(scrub),
    ratio: round(scrub / passthrough, 3),
    gzip_scrub_mb_s: round(median(samples.gzip)),
  }),
);
