/**
 * `npm run bench:hosted`: PoP-verified credential resolves per second (`POST
 * /api/credentials/resolve`, the request `svc run` makes for every intercepted request) against
 * the embedded daemon (SQLite, memory), one daemon on PostgreSQL, and the hosted mode on
 * PostgreSQL + Redis with one and with two replicas (the load split evenly over them). Daemons
 * run in processes of their own, started by the real CLI; the load generator runs here. For each
 * run it also reports the CPU time per resolve of the daemons, PostgreSQL and Redis. Writes
 * bench/results/hosted.json with the ratios; see docs/performance.md.
 *
 * Environment: BENCH_DURATION (s per measurement, default 10), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 10), SVC_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
 * SVC_TEST_REDIS_URL (default redis://127.0.0.1:6379).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ResolvedCredential } from "../src/api/credentials.ts";
import type { Readiness } from "../src/api/health.ts";
import type { DaemonClient } from "../src/client/daemon-client.ts";
import { VERSION } from "../src/core/version.ts";
import type { LocalIdentity } from "../src/identity/identity-files.ts";
import { signPopToken } from "../src/identity/pop-sign.ts";
import { loginWithApiKey } from "../test/support/daemon.ts";
import { startReplicaSet } from "../test/support/replicas.ts";
import { adminQuery, TEST_DATABASE_URL, withSearchPath } from "../test/support/stores.ts";
import { ownCpuMs, processCpuMs } from "./cpu-time.ts";
import { measureThroughput, type Throughput } from "./http-throughput.ts";
import { claimedIdentity } from "./identity.ts";
import { BenchSandbox } from "./sandbox.ts";
import { round } from "./stats.ts";

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));
const PATH = "/api/credentials/resolve";
const BODY = JSON.stringify({ host: "api.openai.com", path: "/v1/models" });
const KEY = `sk-bench-${"x".repeat(40)}`;

const settings = {
  durationSeconds: Number(process.env.BENCH_DURATION ?? 10),
  warmupSeconds: Number(process.env.BENCH_WARMUP ?? 2),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 10),
};

function log(line: string): void {
  process.stderr.write(`bench:hosted: ${line}\n`);
}

/** A fresh PoP token (new jti) for one resolve, bound to its body. */
function resolveAuthorizer(identity: LocalIdentity): () => string {
  const { handle, did, privateKey } = identity;
  return () =>
    `PoP ${signPopToken({ handle, did, privateKey, method: "POST", pathAndQuery: PATH, body: BODY })}`;
}

/** One daemon process under load: where to send requests, and its pid for CPU accounting. */
interface Target {
  url: string;
  pid: number;
}

interface Run {
  label: string;
  store_backend: string;
  runtime_state: string;
  replicas: number;
  resolve_rps: number;
  p50_ms: number;
  p99_ms: number;
  /** CPU time (µs) per resolve: all daemons together, PostgreSQL's processes, Redis, this process. */
  cpu_us_per_resolve: { daemons: number; postgres: number; redis: number; load_generator: number };
  per_replica: Throughput[];
}

/** CPU time (ms) used so far by every process with this command name (PostgreSQL's backends). */
function cpuOfProcessesNamed(name: string): number {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== name) continue;
    } catch {
      continue;
    }
    total += processCpuMs(Number(entry)) ?? 0;
  }
  return total;
}

function cpuSnapshot(targets: Target[]) {
  return {
    daemons: targets.reduce((sum, target) => sum + (processCpuMs(target.pid) ?? 0), 0),
    postgres: cpuOfProcessesNamed("postgres"),
    redis: cpuOfProcessesNamed("redis-server"),
    load_generator: ownCpuMs(),
  };
}

/** Loads every target at once, the connections split evenly, and sums what they served. */
async function measure(
  label: string,
  targets: Target[],
  identity: LocalIdentity,
  ready: Readiness,
): Promise<Run> {
  const perTarget = Math.max(1, Math.round(settings.connections / targets.length));
  const load = (durationSeconds: number) =>
    Promise.all(
      targets.map((target) =>
        measureThroughput({
          baseUrl: target.url,
          path: PATH,
          method: "POST",
          body: BODY,
          connections: perTarget,
          durationSeconds,
          authorize: resolveAuthorizer(identity),
        }),
      ),
    );
  if (settings.warmupSeconds > 0) await load(settings.warmupSeconds);
  const before = cpuSnapshot(targets);
  const results = await load(settings.durationSeconds);
  const after = cpuSnapshot(targets);
  for (const result of results) {
    if (result.non_2xx > 0 || result.errors > 0 || result.timeouts > 0) {
      throw new Error(
        `${label}: ${result.non_2xx} non-2xx ${JSON.stringify(result.status_codes)}, ${result.errors} errors`,
      );
    }
  }
  const total = results.reduce((sum, result) => sum + result.total, 0);
  const perResolve = (key: keyof typeof before) => round(((after[key] - before[key]) * 1000) / total, 0);
  const run: Run = {
    label,
    store_backend: ready.store_backend ?? "unknown",
    runtime_state: ready.runtime_state ?? "memory",
    replicas: targets.length,
    resolve_rps: results.reduce((sum, result) => sum + result.rps, 0),
    p50_ms: Math.max(...results.map((result) => result.p50_ms)),
    p99_ms: Math.max(...results.map((result) => result.p99_ms)),
    cpu_us_per_resolve: {
      daemons: perResolve("daemons"),
      postgres: perResolve("postgres"),
      redis: perResolve("redis"),
      load_generator: perResolve("load_generator"),
    },
    per_replica: results,
  };
  log(
    `${label}: ${run.resolve_rps} resolves/s, p50 ${run.p50_ms} ms, p99 ${run.p99_ms} ms, CPU µs/resolve ${JSON.stringify(run.cpu_us_per_resolve)}`,
  );
  return run;
}

/** Logs in the bench key and checks that a resolve returns it (through `client`). */
async function prepare(label: string, client: DaemonClient): Promise<Readiness> {
  const ready = await client.get<Readiness>("/api/ready");
  if (ready.status !== "ready") throw new Error(`${label}: not ready: ${ready.issues?.join("; ")}`);
  await loginWithApiKey(client, "openai", KEY);
  const check = await client.post<ResolvedCredential>(PATH, JSON.parse(BODY));
  if (check.header_value !== `Bearer ${KEY}`)
    throw new Error(`${label}: resolve returned another credential`);
  return ready;
}

/** One daemon started by the CLI in a throwaway home (the embedded mode, or PostgreSQL alone). */
async function single(label: string, env: NodeJS.ProcessEnv): Promise<Run> {
  const sandbox = await BenchSandbox.create();
  try {
    sandbox.svc(["daemon", "start"], env);
    const { identity, client } = await claimedIdentity(sandbox.layout, sandbox.baseUrl);
    const ready = await prepare(label, client);
    const pid = Number(readFileSync(sandbox.layout.daemonPid, "utf8"));
    return await measure(label, [{ url: sandbox.baseUrl, pid }], identity, ready);
  } finally {
    sandbox.destroy();
  }
}

/** `count` replicas on PostgreSQL and Redis (a schema and a key prefix of their own). */
async function hosted(label: string, count: number): Promise<Run> {
  const set = await startReplicaSet({ count });
  try {
    const ready = await prepare(label, set.replicas[0]!.client);
    const targets = set.replicas.map((replica) => ({ url: replica.url, pid: replica.process.pid! }));
    return await measure(label, targets, set.identity, ready);
  } finally {
    await set.dispose();
  }
}

async function main(): Promise<number> {
  log(`${settings.connections} keep-alive connections in all, ${settings.durationSeconds} s per run`);
  const sqlite = await single("SQLite", {});
  const schema = `svc_bench_${randomBytes(6).toString("hex")}`;
  await adminQuery(`create schema ${schema}`);
  let postgres: Run;
  try {
    postgres = await single("PostgreSQL", { SVC_DATABASE_URL: withSearchPath(TEST_DATABASE_URL, schema) });
  } finally {
    await adminQuery(`drop schema if exists ${schema} cascade`);
  }
  const oneReplica = await hosted("PostgreSQL + Redis, 1 replica", 1);
  const twoReplicas = await hosted("PostgreSQL + Redis, 2 replicas", 2);
  const ratio = (a: Run, b: Run) => round(a.resolve_rps / b.resolve_rps, 3);
  const cpus = os.cpus();
  const results = {
    machine: {
      cpus: cpus.length,
      model: cpus[0]?.model.trim() ?? "unknown",
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      loadavg_1m_at_end: round(os.loadavg()[0] ?? 0, 2),
    },
    date: new Date().toISOString(),
    svc_version: VERSION,
    settings: {
      connections: settings.connections,
      duration_s: settings.durationSeconds,
      warmup_s: settings.warmupSeconds,
    },
    resolve_rps: {
      sqlite: sqlite.resolve_rps,
      postgres: postgres.resolve_rps,
      postgres_redis_1_replica: oneReplica.resolve_rps,
      postgres_redis_2_replicas: twoReplicas.resolve_rps,
    },
    ratios: {
      postgres_over_sqlite: ratio(postgres, sqlite),
      redis_1_replica_over_postgres: ratio(oneReplica, postgres),
      redis_1_replica_over_sqlite: ratio(oneReplica, sqlite),
      redis_2_replicas_over_1_replica: ratio(twoReplicas, oneReplica),
    },
    runs: [sqlite, postgres, oneReplica, twoReplicas],
  };
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, "hosted.json");
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  const line = (run: Run) =>
    `  ${run.label.padEnd(32)} ${String(run.resolve_rps).padStart(6)} resolves/s, p50 ${run.p50_ms} ms, p99 ${run.p99_ms} ms`;
  process.stdout.write(
    [
      `svc ${VERSION}, PoP-verified POST ${PATH}, ${settings.connections} connections in all`,
      ...results.runs.map(line),
      `  ratios: ${JSON.stringify(results.ratios)}`,
      `  results: ${file}`,
      "",
    ].join("\n"),
  );
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `bench:hosted: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
