import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { homeLayout } from "../src/core/paths.ts";
import { freePort, SVC_BIN } from "../test/support/cli.ts";

export { freePort, SVC_BIN };

/**
 * A throwaway SVC_HOME (local_key encryption) with its own loopback port, in which the real CLI
 * runs as a child process of the same Node binary as this one.
 */
export class BenchSandbox {
  readonly root: string;
  readonly layout: ReturnType<typeof homeLayout>;
  readonly port: number;
  readonly baseUrl: string;
  readonly env: NodeJS.ProcessEnv;
  /** The `svc` launcher the benchmark runs: the checkout's sources, or the installed package's. */
  readonly bin: string;
  #destroyed = false;

  private constructor(root: string, port: number, bin: string) {
    this.root = root;
    this.bin = bin;
    this.layout = homeLayout(join(root, "home"));
    this.port = port;
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SVC_HOME: this.layout.home,
      SVC_BASE_URL: this.baseUrl,
      SVC_ENCRYPTION_MODE: "local_key",
      SVC_NO_BROWSER: "1",
      NO_COLOR: "1",
    };
  }

  /** With `installed`, `npm pack` and install the package into the sandbox and run that, as a user would. */
  static async create(options: { installed?: boolean } = {}): Promise<BenchSandbox> {
    const root = mkdtempSync(join(tmpdir(), "svc-bench-"));
    try {
      return new BenchSandbox(root, await freePort(), options.installed ? installPackage(root) : SVC_BIN);
    } catch (error) {
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
  }

  /** Runs `node <bin> <args>` synchronously (with `input` on stdin); throws unless it exits 0. */
  svc(args: string[], extraEnv: NodeJS.ProcessEnv = {}, input?: string): SpawnSyncReturns<string> {
    const result = spawnSync(process.execPath, [this.bin, ...args], {
      env: { ...this.env, ...extraEnv },
      encoding: "utf8",
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      ...(input === undefined ? {} : { input }),
      timeout: 300_000,
    });
    if (result.error) throw result.error;
    if (result.status !== 0) {
      throw new Error(`svc ${args.join(" ")} exited ${result.status}: ${result.stderr}${result.stdout}`);
    }
    return result;
  }

  /** The pid the running daemon recorded in server/daemon.json, if any. */
  daemonPid(): number | undefined {
    try {
      const state = JSON.parse(readFileSync(this.layout.daemonState, "utf8")) as { pid?: unknown };
      return typeof state.pid === "number" ? state.pid : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Stops the daemon and removes the directory. Synchronous, so it can run from a signal handler:
   * `svc daemon stop` first (SIGTERM, then SIGKILL), then a direct SIGKILL of the recorded pid if
   * that failed. Safe to call twice.
   */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    const pid = this.daemonPid();
    try {
      this.svc(["daemon", "stop"]);
    } catch (error) {
      process.stderr.write(`bench: svc daemon stop failed: ${(error as Error).message}\n`);
    }
    if (pid !== undefined) {
      try {
        process.kill(pid, 0);
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Packs this checkout and installs the tarball globally into `root/prefix`; returns the installed launcher. */
function installPackage(root: string): string {
  const checkout = fileURLToPath(new URL("../", import.meta.url));
  // npm's scripts (prepare builds dist/) run on this Node, whatever the system's is.
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}` };
  const npm = (args: string[], cwd: string) => {
    const result = spawnSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd,
      env,
      encoding: "utf8",
      timeout: 300_000,
    });
    if (result.status !== 0) throw new Error(`npm ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  };
  const [{ filename }] = JSON.parse(npm(["pack", "--pack-destination", root, "--json"], checkout)) as Array<{
    filename: string;
  }>;
  const prefix = join(root, "prefix");
  npm(["install", "--global", "--prefix", prefix, join(root, filename)], root);
  return join(prefix, "lib", "node_modules", "svc-credentials", "dist", "cli", "bin.js");
}
