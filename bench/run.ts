/**
 * `npm run bench`: start-up latency of the CLI and PoP-verified throughput of the daemon, measured in
 * a throwaway SVC_HOME against a daemon started by the real CLI (a separate process from the load
 * generator). Writes bench/results/foundation.json; see docs/performance.md.
 *
 * Environment: BENCH_DURATION (s per HTTP measurement, default 10), BENCH_WARMUP (s of HTTP warm-up,
 * default 1), BENCH_CONNECTIONS (default 10), BENCH_RUNS (default 30), BENCH_WARMUPS (default 3),
 * BENCH_PROFILE=1 (or `--profile`): instead, profile the daemon under /api/ready load with
 * `--cpu-prof` and write bench/results/profile-ready.json. `node bench/ready-breakdown.ts` times each
 * step of /api/ready in-process.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { VERSION } from "../src/core/version.ts";
import { measureThroughput, type Throughput } from "./http-throughput.ts";
import { claimedIdentity, popAuthorizer, signingRate } from "./identity.ts";
import { timeProcess } from "./process-latency.ts";
import { analyzeProfile, findProfile, type ProfileSummary } from "./profile.ts";
import { BenchSandbox } from "./sandbox.ts";
import { round, type Summary } from "./stats.ts";

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
}

const settings = {
  durationSeconds: envNumber("BENCH_DURATION", 10),
  warmupSeconds: envNumber("BENCH_WARMUP", 1),
  connections: envNumber("BENCH_CONNECTIONS", 10),
  runs: envNumber("BENCH_RUNS", 30),
  warmups: envNumber("BENCH_WARMUPS", 3),
  profile: process.env.BENCH_PROFILE === "1" || process.argv.includes("--profile"),
};

function machine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    model: cpus[0]?.model.trim() ?? "unknown",
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function describe(summary: Summary): string {
  return `median ${summary.median_ms} ms, p90 ${summary.p90_ms} ms, min ${summary.min_ms} ms (n=${summary.n})`;
}

function describeHttp(result: Throughput): string {
  return `${result.rps} req/s, p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, non-2xx ${result.non_2xx}, errors ${result.errors}`;
}

/** Starts the daemon through the CLI and makes sure it answers to a PoP-signed whoami. */
function startDaemon(sandbox: BenchSandbox, extraEnv: NodeJS.ProcessEnv = {}): void {
  sandbox.svc(["daemon", "start"], extraEnv);
  sandbox.svc(["whoami", "--json"]);
  log(`daemon pid ${sandbox.daemonPid()} at ${sandbox.baseUrl}`);
}

async function load(sandbox: BenchSandbox, path: string, authorize?: () => string): Promise<Throughput> {
  const options = { baseUrl: sandbox.baseUrl, path, connections: settings.connections, authorize };
  if (settings.warmupSeconds > 0)
    await measureThroughput({ ...options, durationSeconds: settings.warmupSeconds });
  const result = await measureThroughput({ ...options, durationSeconds: settings.durationSeconds });
  log(`GET ${path}: ${describeHttp(result)}`);
  return result;
}

async function benchmark(sandbox: BenchSandbox): Promise<number> {
  const { env } = sandbox;
  log(`process latency: ${settings.runs} runs after ${settings.warmups} warm-ups each`);
  const node = timeProcess({ label: "node -e 0", args: ["-e", "0"], env }, settings.runs, settings.warmups);
  log(`node -e 0: ${describe(node)}`);
  const version = timeProcess(
    { label: "svc --version", args: [sandbox.bin, "--version"], env },
    settings.runs,
    settings.warmups,
  );
  log(`svc --version: ${describe(version)}`);

  startDaemon(sandbox);
  const whoami = timeProcess(
    { label: "svc whoami --json", args: [sandbox.bin, "whoami", "--json"], env },
    settings.runs,
    settings.warmups,
  );
  log(`svc whoami --json: ${describe(whoami)}`);

  const { identity, client } = await claimedIdentity(sandbox.layout, sandbox.baseUrl);
  const readiness = await client.get<{ status: string; issues?: string[] }>("/api/ready");
  if (readiness.status !== "ready")
    throw new Error(`the daemon is not ready: ${readiness.issues?.join("; ")}`);
  const authorizeReady = popAuthorizer(identity, "/api/ready");
  const signPerSecond = signingRate(authorizeReady);
  log(`client signs ${signPerSecond} PoP tokens/s on one core`);

  log(`HTTP: ${settings.connections} keep-alive connections, ${settings.durationSeconds} s each`);
  const ready = await load(sandbox, "/api/ready", authorizeReady);
  // A fresh daemon, so this measurement does not inherit the ready run's ids in the replay cache
  // (it holds 100,000 ids for 60 s; see docs/performance.md).
  sandbox.svc(["daemon", "restart"]);
  log(`daemon restarted, pid ${sandbox.daemonPid()}`);
  const whoamiHttp = await load(sandbox, "/api/whoami", popAuthorizer(identity, "/api/whoami"));
  const health = await load(sandbox, "/api/health");

  const versionOverNode = round(version.median_ms / node.median_ms, 2);
  const results = {
    machine: machine(),
    date: new Date().toISOString(),
    svc_version: VERSION,
    settings: {
      runs: settings.runs,
      warmups: settings.warmups,
      connections: settings.connections,
      duration_s: settings.durationSeconds,
      warmup_s: settings.warmupSeconds,
    },
    cli: {
      node_median_ms: node.median_ms,
      version_median_ms: version.median_ms,
      whoami_median_ms: whoami.median_ms,
      version_over_node: versionOverNode,
      whoami_over_node: round(whoami.median_ms / node.median_ms, 2),
      node_e0: node,
      svc_version: version,
      svc_whoami: whoami,
    },
    http: {
      ready_rps: ready.rps,
      health_rps: health.rps,
      whoami_rps: whoamiHttp.rps,
      ready_p99_ms: ready.p99_ms,
      non_2xx: ready.non_2xx,
      ready_over_health: round(ready.rps / health.rps, 3),
      client_sign_per_s: signPerSecond,
      ready,
      whoami: whoamiHttp,
      health,
    },
    targets: {
      version_within_1_3x_of_node: versionOverNode <= 1.3,
      whoami_at_most_100ms: whoami.median_ms <= 100,
      ready_over_3000_rps: ready.rps >= 3000,
    },
  };
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, "foundation.json");
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);

  const mark = (ok: boolean) => (ok ? "met" : "MISSED");
  const m = results.machine;
  process.stdout.write(
    [
      `svc ${VERSION} on ${m.cpus} x ${m.model}, Node ${m.node} (${m.platform})`,
      `  node -e 0          median ${node.median_ms} ms`,
      `  svc --version      median ${version.median_ms} ms  (${versionOverNode}x node; target <= 1.3x: ${mark(results.targets.version_within_1_3x_of_node)})`,
      `  svc whoami --json  median ${whoami.median_ms} ms  (${round(whoami.median_ms / node.median_ms, 2)}x node; target <= 100 ms: ${mark(results.targets.whoami_at_most_100ms)})`,
      `  GET /api/ready     ${ready.rps} req/s PoP-verified, p99 ${ready.p99_ms} ms, non-2xx ${ready.non_2xx}  (target >= 3000: ${mark(results.targets.ready_over_3000_rps)})`,
      `  GET /api/whoami    ${whoamiHttp.rps} req/s PoP-verified`,
      `  GET /api/health    ${health.rps} req/s (no auth); ready/health = ${results.http.ready_over_health}`,
      `  results: ${file}`,
      "",
    ].join("\n"),
  );

  const failures: string[] = [];
  for (const result of [ready, whoamiHttp, health]) {
    if (result.non_2xx > 0 || result.errors > 0 || result.timeouts > 0) {
      failures.push(
        `GET ${result.path}: ${result.non_2xx} non-2xx (${JSON.stringify(result.status_codes)}), ${result.errors} errors, ${result.timeouts} timeouts`,
      );
    }
  }
  for (const failure of failures) process.stderr.write(`bench: FAILED ${failure}\n`);
  if (failures.some((failure) => failure.includes('"401"'))) {
    process.stderr.write(
      "bench: 401s mean signed tokens were refused: an expiry/replay bug, or the daemon's replay cache is full " +
        "(it keeps 100,000 token ids for 60 s; see docs/performance.md)\n",
    );
  }
  return failures.length === 0 ? 0 : 1;
}

/** Restarts the daemon under `--cpu-prof`, loads /api/ready, stops it and summarises the profile. */
async function profileReady(sandbox: BenchSandbox): Promise<number> {
  const directory = join(sandbox.root, "profiles");
  mkdirSync(directory, { recursive: true });
  // The CLI passes its environment to the daemon it spawns (the CLI writes a profile of its own too).
  startDaemon(sandbox, { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${directory}` });
  const pid = sandbox.daemonPid();
  if (pid === undefined) throw new Error("no daemon pid recorded");
  const { identity } = await claimedIdentity(sandbox.layout, sandbox.baseUrl);
  const ready = await load(sandbox, "/api/ready", popAuthorizer(identity, "/api/ready"));
  sandbox.svc(["daemon", "stop"]);
  const written = findProfile(directory, pid);
  if (!written) throw new Error(`the daemon (pid ${pid}) wrote no profile into ${directory}`);
  // Kept outside the sandbox (which is removed) for Chrome DevTools or speedscope.
  const file = join(os.tmpdir(), `svc-bench-ready-${pid}.cpuprofile`);
  copyFileSync(written, file);
  const summary: ProfileSummary & { ready: Throughput } = { ...analyzeProfile(file), ready };
  mkdirSync(RESULTS, { recursive: true });
  const out = join(RESULTS, "profile-ready.json");
  writeFileSync(
    out,
    `${JSON.stringify({ machine: machine(), date: new Date().toISOString(), ...summary }, null, 2)}\n`,
  );
  const table = (title: string, rows: ProfileSummary["inclusive"]) =>
    [
      title,
      ...rows.map(
        (row) => `  ${row.percent.toFixed(1).padStart(5)}%  ${row.ms.toFixed(0).padStart(7)} ms  ${row.name}`,
      ),
    ].join("\n");
  process.stdout.write(
    [
      `daemon profile under GET /api/ready (${ready.rps} req/s while profiling): busy ${summary.busy_ms} ms, idle ${summary.idle_ms} ms`,
      table("self time by location:", summary.self_by_location.slice(0, 15)),
      table("self time by function:", summary.self_by_function.slice(0, 25)),
      table("inclusive (synchronous) time:", summary.inclusive),
      `  profile: ${file}`,
      `  summary: ${out}`,
      "",
    ].join("\n"),
  );
  return 0;
}

async function main(): Promise<number> {
  // What users run: the packed package, installed (its dist/), not the checkout's sources.
  const sandbox = await BenchSandbox.create({ installed: true });
  log(`SVC_HOME ${sandbox.layout.home}`);
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: cleaning up`);
    sandbox.destroy();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    return settings.profile ? await profileReady(sandbox) : await benchmark(sandbox);
  } finally {
    sandbox.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
