/**
 * `npm run bench:transport`: where the proxy's CPU goes without the daemon. The same keep-alive
 * HTTPS load as bench:proxy (bench/proxy-load.ts) against one local upstream, directly and through
 * four proxies of increasing work (bench/transport-proxy.ts): a byte tunnel, a TLS pipe, an HTTP
 * server answering itself, and svc's ProxyServer forwarding with a static header. The modes take
 * turns for BENCH_ROUNDS rounds (default 3), so a change in the machine's load touches them all;
 * the medians are recorded. Writes bench/results/proxy-transport.json; see docs/performance.md.
 *
 * Environment: BENCH_SECONDS (per measurement, default 5), BENCH_WARMUP (default 1),
 * BENCH_CONCURRENCY (default 32), BENCH_ROUNDS.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startUpstream } from "../test/support/upstream.ts";
import { LOAD, type LoadResult, load } from "./load-run.ts";
import { median, round } from "./stats.ts";

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));
const PROXY = fileURLToPath(new URL("./transport-proxy.ts", import.meta.url));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MODES = ["tunnel", "tls-pipe", "self-answer", "intercept"] as const;
const HOST = "api.openai.com";

const upstream = await startUpstream();
const node = process.execPath;
const workDir = mkdtempSync(join(os.tmpdir(), "svc-bench-transport-"));

/** Starts the proxy of one mode; resolves its URL, CA bundle and process. */
async function startProxy(mode: string) {
  const child = spawn(node, [PROXY], {
    env: {
      PATH: process.env.PATH,
      BENCH_TRANSPORT: mode,
      BENCH_TRANSPORT_DIR: join(workDir, mode),
      NODE_EXTRA_CA_CERTS: upstream.caPath,
      SVC_PROXY_CONNECT_TO: upstream.connectTo([HOST]),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.once("data", (chunk: Buffer) => resolve(chunk.toString()));
    child.once("exit", (code) => reject(new Error(`the ${mode} proxy exited ${code}`)));
  });
  const { url, caBundle } = JSON.parse(line) as { url: string; caBundle: string };
  return { child, url, caBundle };
}

const runs: Record<string, LoadResult[]> = { direct: [], ...Object.fromEntries(MODES.map((m) => [m, []])) };
try {
  for (let i = 0; i < ROUNDS; i++) {
    process.stderr.write(`bench:transport: round ${i + 1} of ${ROUNDS}\n`);
    const directEnv = { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: upstream.caPath };
    const directUrl = `https://127.0.0.1:${upstream.port}/status/200`;
    runs.direct!.push(await load([node, LOAD], directEnv, directUrl, CONCURRENCY));
    for (const mode of MODES) {
      const proxy = await startProxy(mode);
      try {
        const env = {
          PATH: process.env.PATH,
          NODE_EXTRA_CA_CERTS: proxy.caBundle,
          HTTPS_PROXY: proxy.url,
          NODE_USE_ENV_PROXY: "1",
        };
        const result = await load([node, LOAD], env, `https://${HOST}/status/200`, CONCURRENCY, {
          proxy: proxy.child.pid!,
        });
        runs[mode]!.push(result);
      } finally {
        proxy.child.kill();
      }
      upstream.seen.length = 0;
    }
  }
  const summary = Object.fromEntries(
    Object.entries(runs).map(([mode, results]) => {
      const perRequest = (name: string) => results.map((r) => r.cpu_us_per_request?.[name] ?? 0);
      return [
        mode,
        {
          rps: median(results.map((r) => r.rps)),
          p50_ms: round(median(results.map((r) => r.p50_ms))),
          cpu_us_per_request: {
            load: median(perRequest("load")),
            upstream: median(perRequest("upstream")),
            ...(mode === "direct" ? {} : { proxy: median(perRequest("proxy")) }),
          },
          failures: results.reduce((sum, r) => sum + r.failures, 0),
        },
      ];
    }),
  );
  const output = {
    generated_at: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model.trim() ?? "unknown",
      node: process.version,
    },
    settings: {
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      request: "GET /status/200, empty body, keep-alive fetch",
    },
    medians: summary,
    runs,
  };
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, "proxy-transport.json"), `${JSON.stringify(output, null, 2)}\n`);
  for (const [mode, s] of Object.entries(summary)) {
    process.stdout.write(
      `${mode.padEnd(12)} ${String(s.rps).padStart(6)} req/s  p50 ${s.p50_ms} ms  CPU µs/request ${JSON.stringify(s.cpu_us_per_request)}\n`,
    );
  }
} finally {
  await upstream.close();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(0);
