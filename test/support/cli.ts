import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const SVC_BIN = fileURLToPath(new URL("../../bin/svc.js", import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A free loopback port (the kernel picks it; we release it for the daemon to take). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A throwaway SVC_HOME with its own daemon port, and a way to run the real `svc` CLI in it. */
export class SvcSandbox {
  readonly home: string;
  readonly port: number;
  readonly baseUrl: string;
  readonly env: NodeJS.ProcessEnv;

  private constructor(home: string, port: number, env: NodeJS.ProcessEnv) {
    this.home = home;
    this.port = port;
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.env = env;
  }

  static async create(extraEnv: NodeJS.ProcessEnv = {}): Promise<SvcSandbox> {
    const home = join(mkdtempSync(join(tmpdir(), "svc-e2e-")), "home");
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SVC_HOME: home,
      SVC_BASE_URL: `http://127.0.0.1:${port}`,
      SVC_NO_BROWSER: "1",
      NO_COLOR: "1",
      ...extraEnv,
    };
    return new SvcSandbox(home, port, env);
  }

  run(
    args: string[],
    options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
  ): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [SVC_BIN, ...args], {
        env: { ...this.env, ...options.env },
        stdio: ["pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
      child.on("error", reject);
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
      });
      child.stdin.end(options.input ?? "");
    });
  }

  async json<T = Record<string, unknown>>(args: string[]): Promise<T> {
    const result = await this.run([...args, "--json"]);
    if (result.code !== 0)
      throw new Error(`svc ${args.join(" ")} exited ${result.code}: ${result.stderr}${result.stdout}`);
    return JSON.parse(result.stdout) as T;
  }

  /** Stops the daemon (if any) and removes the home directory. */
  async destroy(): Promise<void> {
    await this.run(["daemon", "stop"]);
    rmSync(join(this.home, ".."), { recursive: true, force: true });
  }

  /** Every regular file under the home directory, with its content (for canary greps). */
  files(): Array<{ path: string; content: Buffer; mode: number }> {
    const found: Array<{ path: string; content: Buffer; mode: number }> = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.isFile())
          found.push({ path, content: readFileSync(path), mode: statSync(path).mode & 0o777 });
      }
    };
    walk(this.home);
    return found;
  }
}
