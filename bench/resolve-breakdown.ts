/**
 * `node bench/resolve-breakdown.ts`: where the time of one `POST /api/credentials/resolve` goes,
 * the request `svc run` makes for every intercepted request. Starts a daemon in this process, logs
 * in to openai with an API key, and times each step one call at a time, in microseconds per call.
 * Writes bench/results/resolve-breakdown.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ResolvedCredential } from "../src/api/credentials.ts";
import { DaemonClient } from "../src/client/daemon-client.ts";
import { ResolveChannel } from "../src/client/resolve-channel.ts";
import { registerIdentity } from "../src/client/session.ts";
import { homeLayout } from "../src/core/paths.ts";
import { startDaemon } from "../src/daemon/serve.ts";
import { unrestrictedGuard } from "../src/daemon/services/agent-scopes.ts";
import { IdentityFiles } from "../src/identity/identity-files.ts";
import { signPopToken, verifyPopToken } from "../src/identity/pop-token.ts";
import { noKeyring } from "../src/vault/master-key.ts";
import { loginWithApiKey } from "../test/support/daemon.ts";
import { round } from "./stats.ts";

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2000);
const PATH = "/api/credentials/resolve";
const BODY = JSON.stringify({ host: "api.openai.com", path: "/v1/models", provider: "openai" });

/** Mean microseconds per call of `step`, after a tenth as many warm-up calls (`i` never repeats). */
async function time(step: (i: number) => unknown, iterations = ITERATIONS): Promise<number> {
  const warmups = Math.ceil(iterations / 10);
  for (let i = 0; i < warmups; i++) await step(i);
  const start = process.hrtime.bigint();
  for (let i = warmups; i < warmups + iterations; i++) await step(i);
  return round(Number(process.hrtime.bigint() - start) / 1000 / iterations);
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "svc-bench-resolve-"));
  const layout = homeLayout(join(root, "home"));
  const daemon = await startDaemon({
    layout,
    config: { host: "127.0.0.1", port: 0 },
    env: { SVC_ENCRYPTION_MODE: "local_key" },
    keyring: noKeyring("not used by the benchmark"),
    logger: false,
  });
  try {
    const { context, app } = daemon;
    const identity = new IdentityFiles(layout.identities).create();
    const client = new DaemonClient({ baseUrl: daemon.url, identity });
    const record = await registerIdentity(client, identity, layout);
    await loginWithApiKey(client, "openai", `sk-bench-${"x".repeat(40)}`);
    const vaultId = record.vault_id!;
    const host = new URL(daemon.url).host;
    const calls = ITERATIONS + Math.ceil(ITERATIONS / 10);
    const sign = () =>
      signPopToken({ ...identity, method: "POST", pathAndQuery: PATH, body: BODY, lifetimeSeconds: 60 });
    // Tokens are signed before timing starts, so the daemon-side figures are the daemon's work only.
    const tokens = () => Array.from({ length: calls }, sign);
    const body = Buffer.from(BODY);
    const request = JSON.parse(BODY);

    const channel = new ResolveChannel(client);
    const steps = async () => {
      const verifyTokens = tokens();
      const injectTokens = tokens();
      return {
        "(proxy) signPopToken": await time(sign),
        "verifyPopToken (Ed25519 verify + lookup + replay cache)": await time((i) =>
          verifyPopToken(
            verifyTokens[i]!,
            { method: "POST", pathAndQuery: PATH, body },
            {
              nowSeconds: Math.floor(Date.now() / 1000),
              replayCache: context.replayCache,
              lookupIdentity: (handle) => context.identities.lookup(handle),
            },
          ),
        ),
        "principals.get": await time(() => context.principals.get(record.principal_id!)),
        "connections.index": await time(() => context.connections.index(vaultId)),
        "vault.get (select + AES-GCM open + JSON.parse)": await time(() =>
          context.vault.get(vaultId, "connections/openai/default"),
        ),
        "credentials.resolve (the route's work)": await time(() =>
          context.credentials.resolve(
            vaultId,
            request,
            { identity: record.handle, principal_id: record.principal_id! },
            unrestrictedGuard(record.handle),
          ),
        ),
        "inject GET /api/health (Fastify, no socket)": await time(() =>
          app.inject({ method: "GET", url: "/api/health", headers: { host } }),
        ),
        "inject POST resolve (Fastify + PoP + resolve)": await time((i) =>
          app.inject({
            method: "POST",
            url: PATH,
            headers: { host, "content-type": "application/json", authorization: `PoP ${injectTokens[i]}` },
            payload: BODY,
          }),
        ),
        "HTTP GET /api/health (DaemonClient, keep-alive)": await time(() =>
          client.get("/api/health", { auth: "none" }),
        ),
        "HTTP POST resolve (DaemonClient: sign + round trip)": await time(() =>
          client.post<ResolvedCredential>(PATH, request),
        ),
        "channel resolve (ResolveChannel: one line each way)": await time(() => channel.resolve(request)),
      };
    };

    await steps(); // A discarded pass, so the figures are not measured on cold code.
    const measured = await steps();
    const results = { node: process.version, iterations: ITERATIONS, steps: measured };
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "resolve-breakdown.json"), `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`microseconds per call (${ITERATIONS} calls each, one at a time)\n`);
    for (const [step, us] of Object.entries(measured)) {
      process.stdout.write(`${step.padEnd(56)} ${us.toFixed(1).padStart(9)}\n`);
    }
    channel.close();
  } finally {
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
