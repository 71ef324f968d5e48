/**
 * `npm run bench:scrub`: throughput of the proxy's response scrubber. Streams 256 MB of random bytes
 * in 64 KiB chunks through a plain PassThrough, through a SecretScrubber with the two literal
 * secrets (a key and its `Bearer` header value), and with everything the proxy searches for one
 * injected key (those two plus its base64, base64url and percent-encoded forms), and 64 MB of
 * gzip-compressed text through gzip decoding plus scrubbing of all forms; prints the medians of
 * BENCH_RUNS (default 5) runs in MB/s (10^6 bytes) as JSON and writes them to
 * bench/results/scrub.json.
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { type Duplex, PassThrough, Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import zlib from "node:zlib";
import { SecretScrubber, scrubbedBody } from "../src/proxy/scrub.ts";
import { secretForms } from "../src/proxy/secret-forms.ts";
import { quantile, round } from "./stats.ts";

const CHUNK = 64 * 1024;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const KEY = `sk-${randomBytes(48).toString("base64url")}`;
const SECRETS = [`Bearer ${KEY}`, KEY];
/** What the proxy's policy hands the scrubber for one injected key. */
const ALL_FORMS = [`Bearer ${KEY}`, ...secretForms(KEY)];

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

const samples = {
  passthrough: [] as number[],
  scrub: [] as number[],
  forms: [] as number[],
  gzip: [] as number[],
};
// The first round warms up the JIT and is not counted; the cases alternate so drift hits all alike.
for (let run = 0; run <= RUNS; run++) {
  const passthrough = await throughput(new PassThrough(), plain);
  const scrub = await throughput(new SecretScrubber(SECRETS), plain);
  const forms = await throughput(new SecretScrubber(ALL_FORMS), plain);
  const gzip = await throughput(scrubbedBody("gzip", ALL_FORMS).transform, gzipped);
  if (run === 0) continue;
  samples.passthrough.push(passthrough);
  samples.scrub.push(scrub);
  samples.forms.push(forms);
  samples.gzip.push(gzip);
}

const passthrough = median(samples.passthrough);
const scrub = median(samples.scrub);
const forms = median(samples.forms);
const results = {
  passthrough_mb_s: round(passthrough),
  scrub_mb_s: round(scrub),
  ratio: round(scrub / passthrough, 3),
  searched_forms: ALL_FORMS.length,
  all_forms_scrub_mb_s: round(forms),
  all_forms_vs_literal: round(forms / scrub, 3),
  gzip_scrub_mb_s: round(median(samples.gzip)),
};
console.log(JSON.stringify(results));
writeFileSync(new URL("./results/scrub.json", import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
