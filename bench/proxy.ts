/**
 * `npm run bench:proxy`: the same keep-alive HTTPS load (bench/proxy-load.ts) against one local
 * upstream, three ways: direct; through `svc run` (a credential resolve per request); through
 * mitmdump with a one-line addon that sets a static header (the reference peer). Concurrency 1 and
 * 32. Besides latency and throughput it reports the CPU time each process spent per request over the
 * measured phase. Writes bench/results/proxy.json; see docs/performance.md.
 *
 * Each round measures the three paths side by side at each concurrency; the recorded ratios are the
 * medians of each round's ratios, as one round on a shared machine can be far off.
 *
 * Environment: BENCH_SECONDS (per measurement, default 5), BENCH_WARMUP (default 1), BENCH_ROUNDS
 * (default 3), BENCH_PROFILE_DIR (write `--cpu-prof` profiles of the daemon, `svc run` and its load
 * generator there), BENCH_CONCURRENCY (comma-separated levels to measure, default `1,32`; the ratios
 * need both).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startUpstream, type Upstream } from "../test/support/upstream.ts";
import { LOAD, type LoadResult, load, SECONDS, WARMUP } from "./load-run.ts";
import { type Mitmdump, startMitmdump } from "./mitmdump.ts";
import { BenchSandbox, SVC_BIN } from "./sandbox.ts";
import { median, round } from "./stats.ts";

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? "1,32").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HOST = "api.openai.com";
const KEY = `sk-bench-${"x".repeat(40)}`;

function log(line: string): void {
  process.stderr.write(`bench:proxy: ${line}\n`);
}

/** Counts the upstream requests since the last call that carried `expected` as Authorization. */
function injectedSince(upstream: Upstream, expected: string): number {
  const count = upstream.seen.filter((request) => request.headers.authorization === expected).length;
  upstream.seen.length = 0;
  return count;
}

/** Requests/s if only the load generator and the upstream spent CPU (every core busy). */
function ceilingRps(result: LoadResult): number {
  const cpu = result.cpu_us_per_request ?? {};
  const harness = (cpu.load ?? 0) + (cpu.upstream ?? 0);
  return harness > 0 ? (os.cpus().length * 1e6) / harness : Number.POSITIVE_INFINITY;
}

/**
 * How many times more CPU per request mitmdump's process spends than svc's proxy and daemon
 * together: how much lighter svc's path is, whatever the rest of the machine does.
 */
function lighter(svc: LoadResult, mitmdump: LoadResult): number {
  const own = (svc.cpu_us_per_request?.proxy ?? 0) + (svc.cpu_us_per_request?.daemon ?? 0);
  return Math.round(((mitmdump.cpu_us_per_request?.proxy ?? 0) / Math.max(own, 1)) * 10) / 10;
}

type Row = Record<string, LoadResult>;

/** The ratios of one round, each between measurements taken side by side. */
function ratiosOf(c1: Row, c32: Row): Record<string, number> {
  return {
    c1_svc_added_p50_ms: Math.round((c1.svc!.p50_ms - c1.direct!.p50_ms) * 1000) / 1000,
    c32_svc_share_of_direct_rps: Math.round((c32.svc!.rps / c32.direct!.rps) * 100) / 100,
    ...(c32.mitmdump
      ? {
          c32_svc_over_mitmdump_rps: Math.round((c32.svc!.rps / c32.mitmdump.rps) * 10) / 10,
          // The most svc could reach on this machine if its proxy and daemon cost no CPU at all: the
          // load generator and the upstream's CPU per request alone, spread over every core.
          c32_ceiling_over_mitmdump_rps: Math.round((ceilingRps(c32.svc!) / c32.mitmdump.rps) * 10) / 10,
          c32_mitmdump_cpu_over_svc_cpu: lighter(c32.svc!, c32.mitmdump),
        }
      : {}),
    ...(c1.mitmdump
      ? {
          c1_mitmdump_added_p50_ms: Math.round((c1.mitmdump.p50_ms - c1.direct!.p50_ms) * 1000) / 1000,
          // What svc adds over direct, as a share of what mitmdump (a static header) adds.
          c1_svc_added_over_mitmdump_added:
            Math.round(
              ((c1.svc!.p50_ms - c1.direct!.p50_ms) / (c1.mitmdump.p50_ms - c1.direct!.p50_ms)) * 100,
            ) / 100,
          c1_svc_over_mitmdump_rps: Math.round((c1.svc!.rps / c1.mitmdump.rps) * 10) / 10,
          c1_mitmdump_cpu_over_svc_cpu: lighter(c1.svc!, c1.mitmdump),
        }
      : {}),
  };
}

/** The median of each ratio over the rounds. */
function medianRatios(rounds: readonly Record<string, number>[]): Record<string, number> {
  const names = Object.keys(rounds[0] ?? {});
  return Object.fromEntries(
    names.map((name) => [name, round(median(rounds.map((ratios) => ratios[name]!)), 3)]),
  );
}

/** Writes bench/results/proxy.json from rounds at concurrency 1 and 32, and prints the median ratios. */
function record(rounds: readonly Record<string, Row>[]): void {
  const byRound = rounds.map((round) => ratiosOf(round.c1!, round.c32!));
  const ratios = medianRatios(byRound);
  const report = {
    generated_at: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model.trim(), node: process.version },
    settings: {
      seconds: SECONDS,
      warmup_seconds: WARMUP,
      rounds: ROUNDS,
      request: "GET /status/200, empty body, keep-alive fetch",
    },
    /** Each round measured direct, svc and mitmdump side by side at each concurrency. */
    rounds,
    ratios_by_round: byRound,
    /** The median over the rounds of each ratio. */
    ratios,
    targets: {
      c1_svc_added_p50_ms: "<= 0.6",
      c1_svc_added_over_mitmdump_added: "< 0.4",
      c32_svc_over_mitmdump_rps: ">= 6",
    },
  };
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, "proxy.json"), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(ratios, null, 2)}\n`);
}

const upstream = await startUpstream();
const sandbox = await BenchSandbox.create();
let mitm: Mitmdump | undefined;
const cleanup = () => {
  mitm?.stop();
  sandbox.destroy();
};
process.once("SIGINT", () => {
  cleanup();
  process.exit(130);
});

try {
  const profileDir = process.env.BENCH_PROFILE_DIR;
  const proxyEnv = {
    NODE_EXTRA_CA_CERTS: upstream.caPath,
    SVC_PROXY_CONNECT_TO: upstream.connectTo([HOST]),
    ...(profileDir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
  };
  sandbox.svc(["login", "openai"], proxyEnv, `${KEY}\n`);
  // The login started the daemon; keep it warm for the measured runs.
  const node = process.execPath;
  const directEnv = { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: upstream.caPath };
  const proxiedUrl = `https://${HOST}/status/200`;
  const directUrl = `https://127.0.0.1:${upstream.port}/status/200`;

  const started = await startMitmdump(upstream.port, `Bearer ${KEY}`);
  if ("unavailable" in started) log(`${started.unavailable}; skipping it`);
  else mitm = started;

  const rounds: Record<string, Row>[] = [];
  for (let pass = 1; pass <= ROUNDS; pass++) {
    const results: Record<string, Row> = {};
    for (const concurrency of CONCURRENCY) {
      const row: Row = {};
      const step = (path: string) => log(`round ${pass} of ${ROUNDS}, concurrency ${concurrency}: ${path}`);
      step("direct");
      row.direct = await load([node, LOAD], directEnv, directUrl, concurrency);
      upstream.seen.length = 0;
      step("svc run");
      const daemonPid = sandbox.daemonPid();
      const svcResult = await load(
        [node, SVC_BIN, "run", "--", node, LOAD],
        { ...sandbox.env, ...proxyEnv },
        proxiedUrl,
        concurrency,
        { proxy: "child", ...(daemonPid === undefined ? {} : { daemon: daemonPid }) },
      );
      row.svc = { ...svcResult, injected: injectedSince(upstream, `Bearer ${KEY}`) };
      if (mitm) {
        step("mitmdump");
        const mitmResult = await load(
          [node, LOAD],
          {
            PATH: process.env.PATH,
            HTTPS_PROXY: mitm.url,
            NODE_USE_ENV_PROXY: "1",
            NODE_EXTRA_CA_CERTS: mitm.caPath,
          },
          proxiedUrl,
          concurrency,
          { proxy: mitm.child.pid! },
        );
        row.mitmdump = { ...mitmResult, injected: injectedSince(upstream, `Bearer ${KEY}`) };
      }
      results[`c${concurrency}`] = row;
    }
    rounds.push(results);
  }

  if (rounds.every((round) => round.c1 && round.c32)) record(rounds);
  // A partial run (BENCH_CONCURRENCY) is for trying a change: printed, not recorded.
  else process.stdout.write(`${JSON.stringify(rounds.length === 1 ? rounds[0] : rounds, null, 2)}\n`);
} finally {
  cleanup();
  await upstream.close();
}
