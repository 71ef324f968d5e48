/**
 * svc as another project uses it: a consumer in a temporary directory imports it by name, from a
 * node_modules/svc-credentials whose manifest points at this worktree's sources (so edits need no
 * rebuild; test/package/ checks the built package). Its compiler accepts every example of
 * docs/library.md and refuses wrong calls; Node 24 runs it against a real daemon.
 */
import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateClientConfig } from "../../src/client/config.ts";
import { freePort } from "../support/cli.ts";
import { customProvider, loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSC = join(ROOT, "node_modules", ".bin", "tsc");
const SERVER_SOURCE = /\/src\/(daemon|store|vault|audit|flows|cli|proxy)\//;
const SERVER_PACKAGES = /\/node_modules\/(fastify|@fastify|better-sqlite3|kysely|pg|pino|commander|@clack)\//;

/** Node's recommended settings for running TypeScript, plus the common strict flags. */
const TSCONFIG = {
  compilerOptions: {
    noEmit: true,
    target: "esnext",
    module: "nodenext",
    rewriteRelativeImportExtensions: true,
    erasableSyntaxOnly: true,
    verbatimModuleSyntax: true,
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    types: ["node"],
  },
  include: ["*.ts"],
};

/** What an agent writes: no key, no daemon URL, nothing but the package. */
const AGENT = `import { createClient } from "svc-credentials";

const svc = createClient();
const response = await svc.fetch(process.argv.at(-1) ?? "");
const echoed = (await response.json()) as { headers: Record<string, string | undefined> };
console.log(JSON.stringify({ status: response.status, authorized: echoed.headers.authorization?.startsWith("Bearer ") }));
`;

const UNREACHABLE = `import { createClient, DaemonUnavailableError } from "svc-credentials";

const started = performance.now();
const error = await createClient().headers("openai").catch((caught: unknown) => caught);
console.log(JSON.stringify({ unavailable: error instanceof DaemonUnavailableError, ms: performance.now() - started }));
`;

/** Imports `./<argv[2]>` with a resolve hook that records every module URL Node loads. */
const RECORDER = `import { writeFileSync } from "node:fs";
import { registerHooks } from "node:module";
const loaded = [];
registerHooks({ resolve(specifier, context, next) { const result = next(specifier, context); loaded.push(result.url); return result; } });
process.on("exit", () => writeFileSync(process.env.LOADED_FILE, JSON.stringify(loaded)));
await import(\`./\${process.argv[2]}\`);
`;

/** The lines of `wrong.ts` that must not compile. */
const WRONG = [
  'import { type Connection, createClient } from "svc-credentials";',
  "const svc = createClient({ baseUrl: 7998 });",
  "await svc.headers();",
  'await svc.headers("openai", { connection: 1 });',
  'const connection: Connection = await svc.providers.get("openai");',
  "await svc.fetch(42);",
  "console.log(connection);",
];
const WRONG_LINES = [2, 3, 4, 5, 6];

let dir: string;

/**
 * The package as built, but with its entry at the TypeScript source: a manifest of its own beside
 * links to src/ and node_modules/. Node strips the types since the links resolve outside node_modules.
 */
function linkSourcePackage(target: string): void {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<string, unknown>;
  mkdirSync(target, { recursive: true });
  symlinkSync(join(ROOT, "src"), join(target, "src"));
  symlinkSync(join(ROOT, "node_modules"), join(target, "node_modules"));
  const entry = { types: "./src/client/index.ts", default: "./src/client/index.ts" };
  writeFileSync(join(target, "package.json"), JSON.stringify({ ...manifest, exports: { ".": entry } }));
}

function tsc(project: string): { code: number | null; output: string } {
  const result = spawnSync(TSC, ["-p", project], { cwd: dir, encoding: "utf8", timeout: 20_000 });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-consumer-"));
  mkdirSync(join(dir, "node_modules"));
  linkSourcePackage(join(dir, "node_modules", "svc-credentials"));
  symlinkSync(join(ROOT, "node_modules", "@types"), join(dir, "node_modules", "@types"));
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ name: "consumer", type: "module", private: true })}\n`,
  );
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
  writeFileSync(join(dir, "agent.ts"), AGENT);
  writeFileSync(join(dir, "unreachable.ts"), UNREACHABLE);
  writeFileSync(join(dir, "recorder.mjs"), RECORDER);
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("types", () => {
  it("compile every example of docs/library.md and the README, importing svc-credentials by name", () => {
    const docs = ["docs/library.md", "README.md"]
      .map((file) => readFileSync(join(ROOT, file), "utf8"))
      .join("\n");
    const examples = [...docs.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
    expect(examples.length).toBeGreaterThanOrEqual(9);
    for (const [index, example] of examples.entries()) {
      expect(example, `example ${index + 1} imports the package by name`).toContain('from "svc-credentials"');
      writeFileSync(join(dir, `docs-example-${index + 1}.ts`), example);
    }
    const result = tsc("tsconfig.json");
    expect(result.output).toBe("");
    expect(result.code).toBe(0);
  });

  it("refuse wrong calls", () => {
    writeFileSync(join(dir, "wrong.ts"), `${WRONG.join("\n")}\n`);
    writeFileSync(
      join(dir, "tsconfig.wrong.json"),
      JSON.stringify({ extends: "./tsconfig.json", include: [], files: ["wrong.ts"] }),
    );
    const result = tsc("tsconfig.wrong.json");
    rmSync(join(dir, "wrong.ts"));
    expect(result.code).not.toBe(0);
    const errors = [...result.output.matchAll(/^(\S+)\((\d+),\d+\): error TS\d+/gm)];
    expect(new Set(errors.map((error) => error[1]))).toEqual(new Set(["wrong.ts"]));
    expect([...new Set(errors.map((error) => Number(error[2])))].sort()).toEqual(WRONG_LINES);
  });
});

describe("at run time", () => {
  const KEY = `sk-consumer-${randomBytes(16).toString("hex")}`;
  let t: TestDaemon;
  let upstream: Upstream;

  beforeAll(async () => {
    [t, upstream] = await Promise.all([startTestDaemon(), startUpstream()]);
    await t.client.post(
      "/api/providers",
      customProvider("consumer-local", { api_url: `localhost:${upstream.port}` }),
    );
    await loginWithApiKey(t.client, "consumer-local", KEY);
    // The daemon is found through the saved daemon_base_url, as after `svc onboard --base-url`.
    updateClientConfig(t.layout.clientConfig, {
      active_identity: t.identity.handle,
      daemon_base_url: t.daemon.url,
    });
  });
  afterAll(async () => {
    await Promise.all([t?.stop(), upstream?.close()]);
  });

  /**
   * Runs `node recorder.mjs <script> ...args` in the consumer with only what an agent's shell has.
   * Asynchronously: the daemon and the upstream answer from this very process.
   */
  async function run(script: string, args: string[], env: NodeJS.ProcessEnv) {
    const loadedFile = join(dir, `${script}.loaded.json`);
    const childEnv = { PATH: process.env.PATH, SVC_HOME: t.layout.home, LOADED_FILE: loadedFile, ...env };
    const { stdout, stderr } = await execFileAsync(process.execPath, ["recorder.mjs", script, ...args], {
      cwd: dir,
      env: childEnv,
      encoding: "utf8",
      timeout: 15_000,
    });
    return {
      stdout,
      stderr,
      env: childEnv,
      loaded: JSON.parse(readFileSync(loadedFile, "utf8")) as string[],
    };
  }

  it("fetch gets the key while the program and its environment hold none, and no server code loads", async () => {
    const tag = randomBytes(4).toString("hex");
    const result = await run("agent.ts", [`https://localhost:${upstream.port}/echo?t=${tag}`], {
      NODE_EXTRA_CA_CERTS: upstream.caPath,
    });
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual({ status: 200, authorized: true });
    const seen = upstream.seen.filter((request) => request.url.includes(`t=${tag}`));
    expect(seen.map((request) => request.headers.authorization)).toEqual([`Bearer ${KEY}`]);
    expect(JSON.stringify(result.env) + AGENT + result.stdout).not.toContain(KEY);

    expect(result.loaded).toContain(`file://${ROOT}src/client/index.ts`);
    expect(result.loaded.filter((url) => SERVER_SOURCE.test(url) || SERVER_PACKAGES.test(url))).toEqual([]);
  });

  it("a dead daemon is DaemonUnavailableError, the class exported by name, within 2 s", async () => {
    const result = await run("unreachable.ts", [], { SVC_BASE_URL: `http://127.0.0.1:${await freePort()}` });
    expect(result.stderr).toBe("");
    const outcome = JSON.parse(result.stdout) as { unavailable: boolean; ms: number };
    expect(outcome.unavailable).toBe(true);
    expect(outcome.ms).toBeLessThan(2000);
  });
});
