/**
 * `npm run bench:hosted`: PoP-verified credential resolves per second (`POST
 * /api/credentials/resolve`, the request `svc run` makes for every intercepted request) against one
 * daemon on SQLite, then one on PostgreSQL (`SVC_DATABASE_URL`, a schema of its own on the test
 * server, dropped afterwards). Each daemon is started by the real CLI, in its own process; the
 * load generator runs here. Writes bench/results/hosted.json with PostgreSQL/SQLite ratios; see
 * docs/performance.md.
 *
 * Environment: BENCH_DURATION (s per measurement, default 10), BENCH_WARMUP (s, default 2),
 * BENCH_CONNECTIONS (default 10), SVC_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ResolvedCredential } from "../src/api/credentials.ts";
import type { Readiness } from "../src/api/health.ts";
import { VERSION } from "../src/core/version.ts";
import type { LocalIdentity } from "../src/identity/identity-files.ts";
import { signPopToken } from "../src/identity/pop-sign.ts";
import { loginWithApiKey } from "../test/support/daemon.ts";
import { adminQuery, TEST_DATABASE_URL, withSearchPath } from "../test/support/stores.ts";
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

interface StoreRun {
  store_backend: string;
  resolve: Throughput;
}

async function measure(label: string, env: NodeJS.ProcessEnv): Promise<StoreRun> {
  const sandbox = await BenchSandbox.create();
  try {
    sandbox.svc(["daemon", "start"], env);
    const { identity, client } = await claimedIdentity(sandbox.layout, sandbox.baseUrl);
    const ready = await client.get<Readiness>("/api/ready");
    if (ready.status !== "ready")
      throw new Error(`${label}: the daemon is not ready: ${ready.issues?.join("; ")}`);
    await loginWithApiKey(client, "openai", KEY);
    const check = await client.post<ResolvedCredential>(PATH, JSON.parse(BODY));
    if (check.header_value !== `Bearer ${KEY}`)
      throw new Error(`${label}: resolve returned another credential`);
    const options = {
      baseUrl: sandbox.baseUrl,
      path: PATH,
      method: "POST" as const,
      body: BODY,
      connections: settings.connections,
      authorize: resolveAuthorizer(identity),
    };
    if (settings.warmupSeconds > 0)
      await measureThroughput({ ...options, durationSeconds: settings.warmupSeconds });
    const resolve = await measureThroughput({ ...options, durationSeconds: settings.durationSeconds });
    log(
      `${label} (${ready.store_backend}): ${resolve.rps} resolves/s, p50 ${resolve.p50_ms} ms, p99 ${resolve.p99_ms} ms, non-2xx ${resolve.non_2xx}, errors ${resolve.errors}`,
    );
    if (resolve.non_2xx > 0 || resolve.errors > 0 || resolve.timeouts > 0) {
      throw new Error(
        `${label}: ${resolve.non_2xx} non-2xx ${JSON.stringify(resolve.status_codes)}, ${resolve.errors} errors`,
      );
    }
    return { store_backend: ready.store_backend ?? label, resolve };
  } finally {
    sandbox.destroy();
  }
}

async function main(): Promise<number> {
  log(`${settings.connections} keep-alive connections, ${settings.durationSeconds} s per store`);
  const sqlite = await measure("SQLite", {});
  const schema = `svc_bench_${randomBytes(6).toString("hex")}`;
  await adminQuery(`create schema ${schema}`);
  let postgres: StoreRun;
  try {
    postgres = await measure("PostgreSQL", { SVC_DATABASE_URL: withSearchPath(TEST_DATABASE_URL, schema) });
  } finally {
    await adminQuery(`drop schema if exists ${schema} cascade`);
  }
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
    resolve_rps: { sqlite: sqlite.resolve.rps, postgres: postgres.resolve.rps },
    ratios: {
      postgres_over_sqlite_rps: round(postgres.resolve.rps / sqlite.resolve.rps, 3),
      postgres_over_sqlite_p50: round(postgres.resolve.p50_ms / Math.max(sqlite.resolve.p50_ms, 0.001), 3),
      postgres_over_sqlite_p99: round(postgres.resolve.p99_ms / Math.max(sqlite.resolve.p99_ms, 0.001), 3),
    },
    sqlite,
    postgres,
  };
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, "hosted.json");
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    [
      `svc ${VERSION}, PoP-verified POST ${PATH}, ${settings.connections} connections, one daemon per store`,
      `  SQLite      ${sqlite.resolve.rps} resolves/s, p50 ${sqlite.resolve.p50_ms} ms, p99 ${sqlite.resolve.p99_ms} ms`,
      `  PostgreSQL  ${postgres.resolve.rps} resolves/s, p50 ${postgres.resolve.p50_ms} ms, p99 ${postgres.resolve.p99_ms} ms`,
      `  PostgreSQL / SQLite: ${results.ratios.postgres_over_sqlite_rps}x the throughput`,
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
