/**
 * svc as a stranger gets it: `npm pack`, the tarball installed into a temporary prefix, and the
 * installed `svc` and library used on Node 22 and on Node 24 (the npm `node` packages), from
 * outside any checkout. Node strips types only outside node_modules, so this is what proves the
 * build (dist/, its copied assets, bin and exports) works.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/cli.ts";
import { installedOnce, nodeOfLine } from "../support/node-lines.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const NAME = "svc-credentials";
/** Downloads kept between runs of one checkout (Node binaries, @types/node versions). */
const TSC = join(ROOT, "node_modules", ".bin", "tsc");
const SETUP_MS = 300_000;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program without blocking this process (the upstream answers from here). */
function run(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number } = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? tmpdir(),
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
  });
}

/** npm as installed on the machine, its scripts run by this Node (24). */
async function npm(args: string[], cwd: string): Promise<Result> {
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}` };
  const result = await run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    env,
    timeoutMs: 240_000,
  });
  if (result.code !== 0) throw new Error(`npm ${args.join(" ")} failed: ${result.stderr}`);
  return result;
}

let work: string;
let prefix: string;
let packageDir: string;
let upstream: Upstream;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "svc-package-"));
  prefix = join(work, "prefix");
  const packed = await npm(["pack", "--pack-destination", work, "--json"], ROOT);
  const [{ filename }] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
  await npm(["install", "--global", "--prefix", prefix, join(work, filename)], work);
  packageDir = join(prefix, "lib", "node_modules", NAME);
  upstream = await startUpstream();
}, SETUP_MS);
afterAll(async () => {
  await upstream?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  it("ships the build and what it reads at run time, and no sources or tests", () => {
    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
    expect(manifest.engines).toEqual({ node: ">=22" });
    expect(manifest.bin).toEqual({ svc: "dist/cli/bin.js" });
    for (const file of [
      "dist/cli/bin.js",
      "dist/client/index.js",
      "dist/client/index.d.ts",
      "dist/client/index.js.map",
      "dist/providers/bundled/openai.json",
      "dist/dashboard/index.html",
      "dist/proxy/node-preload.cjs",
    ]) {
      expect(existsSync(join(packageDir, file)), file).toBe(true);
    }
    expect(existsSync(join(packageDir, "src"))).toBe(false);
    expect(existsSync(join(packageDir, "dist", "cli", "main.test.js"))).toBe(false);
  });
});

describe.each([22, 24])("installed, on Node %i", (major) => {
  let node: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  const key = `sk-package-${randomBytes(12).toString("hex")}`;

  beforeAll(async () => {
    node = await nodeOfLine(major);
    port = await freePort();
    const home = join(work, `home-${major}`);
    env = {
      // The installed `svc` and this Node first, as for a user who installed it globally.
      PATH: [join(prefix, "bin"), dirname(node), process.env.PATH].join(delimiter),
      HOME: work,
      SVC_HOME: home,
      SVC_ENCRYPTION_MODE: "local_key",
      SVC_NO_BROWSER: "1",
      NO_COLOR: "1",
    };
  }, SETUP_MS);
  afterAll(async () => {
    if (env) await run("svc", ["daemon", "stop"], { env });
  });

  const svc = (args: string[], extra: { env?: NodeJS.ProcessEnv; input?: string } = {}) =>
    run("svc", args, { env: { ...env, ...extra.env }, input: extra.input ?? "", cwd: work });

  /** The files and builtins `svc <args>` loads, through a module hook (Node 22.15 and later). */
  async function loadedBy(args: string[]): Promise<Result & { files: string[]; builtins: string[] }> {
    const hook = join(work, "loaded-hook.mjs");
    writeFileSync(
      hook,
      `import { registerHooks } from "node:module";
const files = [];
registerHooks({ load(url, context, next) { if (url.startsWith("file:")) files.push(url); return next(url, context); } });
process.on("exit", () => process.stderr.write("\\nLOADED " + JSON.stringify({ files, builtins: process.moduleLoadList }) + "\\n"));
`,
    );
    const result = await run(
      node,
      ["--import", pathToFileURL(hook).href, join(packageDir, "dist", "cli", "bin.js"), ...args],
      {
        env,
        cwd: work,
      },
    );
    const line = result.stderr.split("\n").find((text) => text.startsWith("LOADED "));
    if (!line) throw new Error(`no module list from svc ${args.join(" ")}: ${result.stderr}`);
    const loaded = JSON.parse(line.slice("LOADED ".length)) as { files: string[]; builtins: string[] };
    return {
      ...result,
      files: loaded.files.filter((file) => file !== pathToFileURL(hook).href),
      builtins: loaded.builtins,
    };
  }

  it("runs this Node", async () => {
    expect((await run("node", ["--version"], { env })).stdout).toMatch(new RegExp(`^v${major}\\.`));
  });

  it("svc --version, daemon start --port, whoami, login from stdin, connections, run, daemon stop", async () => {
    expect(await svc(["--version"])).toMatchObject({ code: 0, stdout: `${VERSION}\n` });

    const started = await svc(["daemon", "start", "--port", String(port)]);
    expect(started.code, started.stderr).toBe(0);

    const whoami = await svc(["whoami", "--json"]);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout)).toMatchObject({
      daemon_url: `http://127.0.0.1:${port}`,
      principal_role: "admin",
    });

    // The start-up budget (docs/performance.md): whoami loads the bundle's own files alone (no
    // package, none of tsc's modules) and none of the builtins that cost a CLI 5-55 ms each.
    const loaded = await loadedBy(["whoami", "--json"]);
    expect(loaded.code, loaded.stderr).toBe(0);
    for (const file of loaded.files) expect(file).toMatch(new RegExp(`/${NAME}/dist/cli/[^/]+\\.js$`));
    for (const builtin of ["http", "https", "tls", "internal/fs/promises", "perf_hooks"]) {
      expect(loaded.builtins).not.toContain(`NativeModule ${builtin}`);
    }

    const login = await svc(["login", "openai"], { input: `${key}\n` });
    expect(login.code, login.stderr).toBe(0);

    const connections = await svc(["connections", "--json"]);
    expect(connections.code, connections.stderr).toBe(0);
    expect(JSON.parse(connections.stdout)).toEqual([expect.objectContaining({ provider: "openai" })]);
    expect(connections.stdout).not.toContain(key);

    const tag = randomBytes(4).toString("hex");
    const child = `fetch("https://api.openai.com/echo?t=${tag}").then((r) => console.log("status", r.status))`;
    const ran = await svc(["run", "--", "node", "-e", child], {
      env: {
        NODE_EXTRA_CA_CERTS: upstream.caPath,
        SVC_PROXY_CONNECT_TO: upstream.connectTo(["api.openai.com"]),
      },
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("status 200");
    const seen = upstream.seen.filter((request) => request.url.includes(`t=${tag}`));
    expect(seen.map((request) => request.headers.authorization)).toEqual([`Bearer ${key}`]);
    expect(ran.stdout + ran.stderr).not.toContain(key);

    const stopped = await svc(["daemon", "stop", "--json"]);
    expect(JSON.parse(stopped.stdout)).toEqual({ stopped: true });
  }, 120_000);

  it("the library loads by name from ESM and from CommonJS require()", async () => {
    const consumer = join(work, `consumer-${major}`);
    mkdirSync(join(consumer, "node_modules"), { recursive: true });
    symlinkSync(packageDir, join(consumer, "node_modules", NAME));
    const esm = await run(
      node,
      [
        "--input-type=module",
        "-e",
        `import { createClient, DaemonUnavailableError } from "${NAME}"; console.log(typeof createClient, typeof DaemonUnavailableError);`,
      ],
      { cwd: consumer, env },
    );
    expect(esm).toMatchObject({ code: 0, stdout: "function function\n", stderr: "" });
    const cjs = await run(
      node,
      [
        "--input-type=commonjs",
        "-e",
        `const svc = require("${NAME}"); console.log(typeof svc.createClient);`,
      ],
      { cwd: consumer, env },
    );
    expect(cjs).toMatchObject({ code: 0, stdout: "function\n", stderr: "" });
  });
});

describe("a TypeScript consumer", () => {
  const PROGRAM = `import { createClient, type Connection, DaemonUnavailableError } from "${NAME}";

const svc = createClient();
const response = await svc.fetch("https://api.github.com/user");
const connections: Connection[] = await svc.connections.list();
const error: unknown = await svc.headers("openai").catch((caught: unknown) => caught);
console.log(response.status, connections.length, error instanceof DaemonUnavailableError);
`;
  const TSCONFIG = {
    compilerOptions: {
      target: "es2022",
      module: "nodenext",
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ["node"],
    },
    include: ["*.ts"],
  };

  it.each(["22", "24", "latest"])(
    "type-checks with @types/node@%s and skipLibCheck false",
    async (types) => {
      const typesDir = await installedOnce(`types-node-${types}`, `@types/node@${types}`);
      const consumer = join(work, `types-${types}`);
      mkdirSync(join(consumer, "node_modules"), { recursive: true });
      symlinkSync(packageDir, join(consumer, "node_modules", NAME));
      symlinkSync(join(typesDir, "node_modules", "@types"), join(consumer, "node_modules", "@types"));
      writeFileSync(join(consumer, "package.json"), JSON.stringify({ type: "module", private: true }));
      writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify(TSCONFIG));
      writeFileSync(join(consumer, "agent.ts"), PROGRAM);
      const checked = await run(TSC, ["-p", "tsconfig.json"], { cwd: consumer });
      expect(checked.stdout + checked.stderr).toBe("");
      expect(checked.code).toBe(0);
    },
    SETUP_MS,
  );
});

describe("an older Node", () => {
  it(
    "gets one line naming the version needed",
    async () => {
      const node = await nodeOfLine(20);
      const result = await run(node, [join(prefix, "bin", "svc"), "whoami"], { cwd: work });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(/^svc needs Node\.js 22 or newer; this is Node\.js v20\.\d+\.\d+\n$/);
    },
    SETUP_MS,
  );
});
