/**
 * The load generator of `npm run bench:proxy`, run as a child (directly, inside `svc run`, or
 * behind mitmdump): keep-alive HTTPS requests with `fetch` at a fixed concurrency for a fixed
 * time. The proxy, if any, comes from HTTPS_PROXY with NODE_USE_ENV_PROXY=1. Prints one JSON line.
 * Input: BENCH_LOAD = {"url", "concurrency", "seconds", "warmupSeconds"}. Writes `measuring` and
 * `measured` lines to stderr around the measured phase, so the parent can read the other processes'
 * CPU time over exactly that phase.
 */
import { quantile } from "./stats.ts";

interface LoadSpec {
  url: string;
  concurrency: number;
  seconds: number;
  warmupSeconds: number;
}

const spec = JSON.parse(process.env.BENCH_LOAD ?? "{}") as LoadSpec;

async function worker(until: number, latencies: number[] | undefined): Promise<number> {
  let failures = 0;
  while (performance.now() < until) {
    const started = performance.now();
    const response = await fetch(spec.url);
    await response.arrayBuffer();
    if (response.status !== 200) failures++;
    latencies?.push(performance.now() - started);
  }
  return failures;
}

async function phase(seconds: number, latencies?: number[]): Promise<number> {
  const until = performance.now() + seconds * 1000;
  const failures = await Promise.all(
    Array.from({ length: spec.concurrency }, () => worker(until, latencies)),
  );
  return failures.reduce((a, b) => a + b, 0);
}

await phase(spec.warmupSeconds);
const latencies: number[] = [];
process.stderr.write("measuring\n");
const cpuBefore = process.cpuUsage();
const started = performance.now();
const failures = await phase(spec.seconds, latencies);
const elapsed = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
process.stderr.write("measured\n");
latencies.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({
    requests: latencies.length,
    failures,
    rps: Math.round(latencies.length / elapsed),
    p50_ms: Math.round(quantile(latencies, 0.5) * 1000) / 1000,
    p99_ms: Math.round(quantile(latencies, 0.99) * 1000) / 1000,
    cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
  })}\n`,
);
