/**
 * The first command of a fresh home always works: creating, registering and claiming the local
 * identity is single-flight, across the parallel requests of one CLI process and across CLI
 * processes started together on one home.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { homeLayout } from "../../src/core/paths.ts";
import { startDaemon } from "../../src/daemon/serve.ts";
import { noKeyring } from "../../src/vault/master-key.ts";
import { type CliResult, mapConcurrently, SvcSandbox } from "../support/cli.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function identityFiles(home: string): string[] {
  try {
    return readdirSync(join(home, "client", "identities")).filter((name) => name.endsWith(".key"));
  } catch {
    return [];
  }
}

function describeFailures(results: CliResult[]): string {
  return results
    .filter((result) => result.code !== 0)
    .map((result) => `exit ${result.code}: ${result.stderr.trim()} ${result.stdout.trim()}`)
    .join("\n");
}

describe("the first command of a fresh home", () => {
  it("`provider list --json` succeeds in each of 50 fresh homes, with one identity each", async () => {
    const homes = Array.from({ length: 50 }, () => {
      const root = mkdtempSync(join(tmpdir(), "svc-first-"));
      roots.push(root);
      return join(root, "home");
    });
    const outcomes = await mapConcurrently(homes, 4, async (home) => {
      // The home's own daemon (in this process, like `svc daemon start` before the first command).
      const layout = homeLayout(home);
      const env = { SVC_ENCRYPTION_MODE: "local_key" };
      const daemon = await startDaemon({
        layout,
        config: { host: "127.0.0.1", port: 0 },
        env,
        keyring: noKeyring("no keyring in tests"),
        logger: false,
      });
      try {
        const sandbox = await SvcSandbox.create({ SVC_HOME: home, SVC_BASE_URL: daemon.url, ...env });
        const result = await sandbox.run(["provider", "list", "--json"]);
        const registered = await daemon.context.store.db.selectFrom("identities").select("handle").execute();
        return { result, local: identityFiles(home).length, registered: registered.length };
      } finally {
        await daemon.close();
      }
    });
    expect(describeFailures(outcomes.map((outcome) => outcome.result))).toBe("");
    for (const outcome of outcomes) {
      expect(JSON.parse(outcome.result.stdout)).toHaveProperty("bundled");
      expect(outcome).toMatchObject({ local: 1, registered: 1 });
    }
  }, 240_000);

  it("20 CLI processes started together on one fresh home all succeed and share one identity", async () => {
    const sandbox = await SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" });
    roots.push(join(sandbox.home, ".."));
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, () => sandbox.run(["provider", "list", "--json"], { timeoutMs: 90_000 })),
      );
      expect(describeFailures(results)).toBe("");
      expect(identityFiles(sandbox.home)).toHaveLength(1);
      const whoami = await sandbox.json<{ identity: string; principal_id?: string }>(["whoami"]);
      expect(identityFiles(sandbox.home)).toEqual([`${whoami.identity}.key`]);
      expect(whoami.principal_id).toMatch(/^prn_/);
    } finally {
      await sandbox.destroy();
    }
  }, 180_000);
});
