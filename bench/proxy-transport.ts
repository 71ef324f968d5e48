/**
 * `npm run bench:transport`: where the proxy's cost goes without the daemon, and the floor any
 * proxy built like svc's meets on this machine. The same keep-alive HTTPS load as bench:proxy
 * (bench/proxy-load.ts) against one local upstream, directly, through four proxies of increasing
 * work (bench/transport-proxy.ts): a byte tunnel, a TLS pipe, an HTTP server answering itself, and
 * svc's ProxyServer forwarding with a static header (no resolve), and through mitmdump with the
 * same static header (bench/mitmdump.ts). The paths take turns for BENCH_ROUNDS rounds (default 3)
 * at each concurrency, so a change in the machine's load touches them all; the medians are
 * recorded, with each path's added p50 over direct at concurrency 1 and its requests/s over
 * mitmdump's at the highest concurrency. Writes bench/results/proxy-transport.json; see
 * docs/performance.md.
 *
 * Environment: BENCH_SECONDS (per measurement, default 5), BENCH_WARMUP (default 1),
 * BENCH_CONCURRENCY (comma-separated levels, default `1,32`), BENCH_ROUNDS.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startUpstream } from "../test/support/upstream.ts";
import { LOAD, type LoadResult, load } from "./load-run.ts";
import { type Mitmdump, startMitmdump } from "./mitmdump.ts";
import { median, round } from "./stats.ts";

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));
const PROXY = fileURLToPath(new URL("./transport-proxy.ts", import.meta.url));
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? "1,32").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MODES = ["tunnel", "tls-pipe", "self-answer", "intercept"] as const;
const HOST = "api.openai.com";
const AUTHORIZATION = "Bearer sk-bench-static";

const upstream = await startUpstream();
const node = process.execPath;
const workDir = mkdtempSync(join(os.tmpdir(), "svc-bench-transport-"));

/** A proxy under measurement: its URL, the CA its clients trust, and its process. */
interface Proxy {
  url: string;
  caPath: string;
  pid: number;
  stop(): void;
}

/** Starts the proxy of one svc mode in its own process. */
async function startMode(mode: (typeof MODES)[number]): Promise<Proxy> {
  const child = spawn(node, [PROXY], {
    env: {
      PATH: process.env.PATH,
      BENCH_TRANSPORT: mode,
      BENCH_TRANSPORT_DIR: join(workDir, mode),
      BENCH_AUTHORIZATION: AUTHORIZATION,
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
  return { url, caPath: caBundle, pid: child.pid!, stop: () => child.kill() };
}

/** Medians over the rounds of one path at one concurrency. */
function summarize(mode: string, results: readonly LoadResult[]) {
  const perRequest = (name: string) => results.map((r) => r.cpu_us_per_request?.[name] ?? 0);
  return {
    rps: median(results.map((r) => r.rps)),
    p50_ms: round(median(results.map((r) => r.p50_ms)), 3),
    cpu_us_per_request: {
      load: median(perRequest("load")),
      upstream: median(perRequest("upstream")),
      ...(mode === "direct" ? {} : { proxy: median(perRequest("proxy")) }),
    },
    failures: results.reduce((sum, r) => sum + r.failures, 0),
  };
}

type Summary = ReturnType<typeof summarize>;

/**
 * What each path costs against the targets svc is held to: its added p50 over direct at
 * concurrency 1, and its requests/s over mitmdump's at the highest concurrency measured.
 */
function floors(
  byConcurrency: Record<string, Record<string, Summary>>,
): Record<string, Record<string, number>> {
  const c1 = byConcurrency.c1;
  const top = byConcurrency[`c${Math.max(...CONCURRENCY)}`];
  const paths = Object.keys(c1 ?? top ?? {}).filter((path) => path !== "direct");
  return Object.fromEntries(
    paths.map((path) => {
      const entry: Record<string, number> = {};
      if (c1?.[path] && c1.direct) entry.c1_added_p50_ms = round(c1[path].p50_ms - c1.direct.p50_ms, 3);
      if (top?.[path] && top.mitmdump && path !== "mitmdump") {
        entry.top_rps_over_mitmdump = round(top[path].rps / top.mitmdump.rps, 2);
      }
      return [path, entry];
    }),
  );
}

const mitmdump = await startMitmdump(upstream.port, AUTHORIZATION);
if ("unavailable" in mitmdump)
  process.stderr.write(`bench:transport: ${mitmdump.unavailable}; skipping it\n`);
const peer: Mitmdump | undefined = "unavailable" in mitmdump ? undefined : mitmdump;
const paths = [...MODES, ...(peer ? (["mitmdump"] as const) : [])];
const runs: Record<string, Record<string, LoadResult[]>> = Object.fromEntries(
  CONCURRENCY.map((level) => [
    `c${level}`,
    Object.fromEntries(["direct", ...paths].map((path) => [path, []])),
  ]),
);
try {
  for (let i = 0; i < ROUNDS; i++) {
    for (const concurrency of CONCURRENCY) {
      process.stderr.write(`bench:transport: round ${i + 1} of ${ROUNDS}, concurrency ${concurrency}\n`);
      const row = runs[`c${concurrency}`]!;
      const directEnv = { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: upstream.caPath };
      const directUrl = `https://127.0.0.1:${upstream.port}/status/200`;
      row.direct!.push(await load([node, LOAD], directEnv, directUrl, concurrency));
      for (const path of paths) {
        // mitmdump keeps running between measurements; the svc modes start afresh each time.
        const proxy: Proxy =
          path === "mitmdump"
            ? { url: peer!.url, caPath: peer!.caPath, pid: peer!.child.pid!, stop: () => {} }
            : await startMode(path);
        try {
          const env = {
            PATH: process.env.PATH,
            NODE_EXTRA_CA_CERTS: proxy.caPath,
            HTTPS_PROXY: proxy.url,
            NODE_USE_ENV_PROXY: "1",
          };
          const url = `https://${HOST}/status/200`;
          const result = await load([node, LOAD], env, url, concurrency, { proxy: proxy.pid });
          const injected = upstream.seen.filter((r) => r.headers.authorization === AUTHORIZATION).length;
          // A header-setting path that did not set it measured something else.
          if ((path === "intercept" || path === "mitmdump") && injected < result.requests) {
            throw new Error(`${path}: ${injected} of ${result.requests} requests carried the header`);
          }
          row[path]!.push(result);
        } finally {
          proxy.stop();
          upstream.seen.length = 0;
        }
      }
    }
  }
  const medians = Object.fromEntries(
    Object.entries(runs).map(([level, row]) => [
      level,
      Object.fromEntries(Object.entries(row).map(([path, results]) => [path, summarize(path, results)])),
    ]),
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
    medians,
    floors: floors(medians),
    runs,
  };
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, "proxy-transport.json"), `${JSON.stringify(output, null, 2)}\n`);
  for (const [level, row] of Object.entries(medians)) {
    for (const [path, s] of Object.entries(row)) {
      process.stdout.write(
        `${level.padEnd(4)} ${path.padEnd(12)} ${String(s.rps).padStart(6)} req/s  p50 ${s.p50_ms} ms  CPU µs/request ${JSON.stringify(s.cpu_us_per_request)}\n`,
      );
    }
  }
  process.stdout.write(`${JSON.stringify(output.floors, null, 2)}\n`);
} finally {
  peer?.stop();
  await upstream.close();
  rmSync(workDir, { recursive: true, force: true });
}
process.exit(0);
