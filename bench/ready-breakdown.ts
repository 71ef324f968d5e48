/**
 * `node bench/ready-breakdown.ts`: where the time of one `GET /api/ready` goes. Starts a daemon in
 * this process (as test/support/daemon.ts does) and times each step the route performs, one call at a
 * time, in microseconds per call; then again with stored entries, since the integrity check opens
 * every entry of every vault. Writes bench/results/ready-breakdown.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import BetterSqlite3 from "better-sqlite3";
import { DaemonClient } from "../src/client/daemon-client.ts";
import { registerIdentity } from "../src/client/session.ts";
import { homeLayout } from "../src/core/paths.ts";
import { startDaemon } from "../src/daemon/serve.ts";
import { evaluateReadiness, SPEC_VERSION_SETTING } from "../src/daemon/services/readiness.ts";
import { IdentityFiles } from "../src/identity/identity-files.ts";
import { signPopToken, verifyPopToken } from "../src/identity/pop-token.ts";
import { SettingsRepository } from "../src/store/settings.ts";
import { masterKeyWarnings, noKeyring } from "../src/vault/master-key.ts";
import { round } from "./stats.ts";

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2000);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 200);

/** Mean microseconds per call of `step`, after a tenth as many warm-up calls (`i` never repeats). */
async function time(step: (i: number) => unknown, iterations = ITERATIONS): Promise<number> {
  const warmups = Math.ceil(iterations / 10);
  for (let i = 0; i < warmups; i++) await step(i);
  const start = process.hrtime.bigint();
  for (let i = warmups; i < warmups + iterations; i++) await step(i);
  return round(Number(process.hrtime.bigint() - start) / 1000 / iterations);
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "svc-bench-breakdown-"));
  const layout = homeLayout(join(root, "home"));
  const daemon = await startDaemon({
    layout,
    config: { host: "127.0.0.1", port: 0 },
    env: { SVC_ENCRYPTION_MODE: "local_key" },
    keyring: noKeyring("not used by the benchmark"),
    logger: false,
  });
  const raw = new BetterSqlite3(layout.database, { readonly: true });
  try {
    const { context, app } = daemon;
    const identity = new IdentityFiles(layout.identities).create();
    const record = await registerIdentity(
      new DaemonClient({ baseUrl: daemon.url, identity }),
      identity,
      layout,
    );
    const caller = { handle: identity.handle, did: identity.did, principalId: record.principal_id ?? null };
    const vaultId = record.vault_id ?? "system";
    const host = new URL(daemon.url).host;
    const token = (path: string) =>
      signPopToken({ ...identity, method: "GET", pathAndQuery: path, lifetimeSeconds: 60 });
    const settings = new SettingsRepository(context.store.db);
    const selectOne = raw.prepare("select 1");
    const calls = ITERATIONS + Math.ceil(ITERATIONS / 10);
    // Tokens are signed before timing starts, so the figures are the daemon's work only.
    const signed = (path: string) => Array.from({ length: calls }, () => token(path));

    const steps = async () => {
      const tokens = signed("/api/ready");
      const whoamiAuth = signed("/api/whoami").map((t) => `PoP ${t}`);
      const readyAuth = signed("/api/ready").map((t) => `PoP ${t}`);
      const empty = new Uint8Array();
      return {
        "(client) signPopToken, for reference": await time(() => token("/api/ready")),
        "PoP verifyPopToken (Ed25519 verify + lookup + replay cache)": await time((i) =>
          verifyPopToken(
            tokens[i]!,
            { method: "GET", pathAndQuery: "/api/ready", body: empty },
            {
              nowSeconds: Math.floor(Date.now() / 1000),
              replayCache: context.replayCache,
              lookupIdentity: (handle) => context.identities.lookup(handle),
            },
          ),
        ),
        "principals.get (cached)": await time(() => context.principals.get(caller.principalId!)),
        "store.probe (select 1 via Kysely)": await time(() => context.store.probe()),
        "  same query, prepared once, raw better-sqlite3": await time(() => selectOne.get()),
        "vault.roundTrip (put + get + delete + get: 2 writes)": await time(() =>
          context.vault.roundTrip(vaultId),
        ),
        "vault.checkIntegrity (opens every entry of every vault)": await time(() =>
          context.vault.checkIntegrity(),
        ),
        "vault.list connections/": await time(() => context.vault.list(vaultId, "connections/")),
        "settings.get spec_version": await time(() => settings.get(SPEC_VERSION_SETTING)),
        "masterKeyWarnings (stats the key file)": await time(() => masterKeyWarnings(context.masterKey)),
        "evaluateReadiness as served (the route's whole check)": await time(() =>
          evaluateReadiness(context, caller),
        ),
        "inject GET /api/health (Fastify, no socket)": await time(() =>
          app.inject({ method: "GET", url: "/api/health", headers: { host } }),
        ),
        "inject GET /api/whoami (Fastify + PoP)": await time((i) =>
          app.inject({ method: "GET", url: "/api/whoami", headers: { host, authorization: whoamiAuth[i]! } }),
        ),
        "inject GET /api/ready (Fastify + PoP + readiness)": await time((i) =>
          app.inject({ method: "GET", url: "/api/ready", headers: { host, authorization: readyAuth[i]! } }),
        ),
      };
    };

    await steps(); // A discarded pass, so the first column is not measured on cold code.
    const empty = await steps();
    for (let i = 0; i < ENTRIES; i++)
      await context.vault.put(vaultId, `secrets/bench-${i}`, { value: "x".repeat(64), i });
    const withEntries = await steps();

    const rows = Object.keys(empty).map((step) => ({
      step,
      empty_us: empty[step as keyof typeof empty],
      [`with_${ENTRIES}_entries_us`]: withEntries[step as keyof typeof withEntries],
    }));
    const results = { node: process.version, iterations: ITERATIONS, entries: ENTRIES, steps: rows };
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "ready-breakdown.json"), `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(
      `microseconds per call (${ITERATIONS} calls each, one at a time), Node ${process.version}\n`,
    );
    process.stdout.write(
      `${"step".padEnd(62)} ${"empty".padStart(9)} ${`${ENTRIES} entries`.padStart(12)}\n`,
    );
    for (const row of rows) {
      const withN = row[`with_${ENTRIES}_entries_us`] as number;
      process.stdout.write(
        `${row.step.padEnd(62)} ${row.empty_us.toFixed(1).padStart(9)} ${withN.toFixed(1).padStart(12)}\n`,
      );
    }
  } finally {
    raw.close();
    await daemon.close();
    rmSync(root, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
