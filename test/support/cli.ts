import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const SVC_BIN = fileURLToPath(new URL("../../src/cli/bin.ts", import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A CLI process started with `SvcSandbox.start`. */
export interface RunningCli {
  pid: number | undefined;
  /** What it printed so far. */
  output: { stdout: string; stderr: string };
  /** Its exit code and complete output. */
  result: Promise<CliResult>;
  /** Resolves with the first match of `pattern` in the stream (rejects if it exits first). */
  waitFor(stream: "stdout" | "stderr", pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): void;
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
    return this.start(args, options).result;
  }

  /**
   * Starts the CLI without waiting for it: for commands that print something the test acts on
   * while they wait (e.g. `login --browser` printing its link). stdin is ended with `input`.
   */
  start(
    args: string[],
    options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
  ): RunningCli {
    const child = spawn(process.execPath, [SVC_BIN, ...args], {
      env: { ...this.env, ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const output = { stdout: "", stderr: "" };
    const listeners = new Set<() => void>();
    const changed = () => {
      for (const listener of listeners) listener();
    };
    child.stdout.on("data", (chunk: Buffer) => {
      output.stdout += chunk.toString();
      changed();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output.stderr += chunk.toString();
      changed();
    });
    const result = new Promise<CliResult>((resolve, reject) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
      child.on("error", reject);
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        resolve({ code: code ?? (signal ? 128 : 1), ...output });
        changed();
      });
    });
    // A command that exits without reading stdin (`svc --version`) closes the pipe first: EPIPE.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input ?? "");
    const waitFor = (stream: "stdout" | "stderr", pattern: RegExp, timeoutMs = 15_000) =>
      new Promise<RegExpMatchArray>((resolve, reject) => {
        const check = () => {
          const match = output[stream].match(pattern);
          if (match) {
            finish();
            resolve(match);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            finish();
            reject(
              new Error(`svc exited before ${stream} matched ${pattern}: ${output.stderr}${output.stdout}`),
            );
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`${stream} did not match ${pattern} within ${timeoutMs} ms: ${output[stream]}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    return { pid: child.pid, output, result, waitFor, kill: (signal) => child.kill(signal) };
  }

  /** `svc login <provider>` with each key on stdin; throws with svc's words when one fails. */
  async loginKeys(keys: ReadonlyArray<readonly [provider: string, key: string]>): Promise<void> {
    for (const [provider, key] of keys) {
      const login = await this.run(["login", provider], { input: `${key}\n` });
      if (login.code !== 0) throw new Error(`svc login ${provider} exited ${login.code}: ${login.stderr}`);
    }
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

/** Runs `task` over `items` with at most `limit` in flight; results keep the items' order. */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * Does what a browser does with the daemon's API-key page: loads it, takes the hidden `token` and
 * `csrf` inputs, and posts the form (urlencoded, with the daemon's Origin). Returns the answer page.
 */
export async function submitApiKeyPage(
  pageUrl: string,
  apiKey: string,
): Promise<{ status: number; html: string }> {
  const page = await fetch(pageUrl);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`the key page answered ${page.status}: ${html}`);
  const hidden = (name: string) => {
    const match = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(html);
    if (!match) throw new Error(`no hidden ${name} input on the key page`);
    return match[1]!.replaceAll("&amp;", "&");
  };
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error("no form on the key page");
  const origin = new URL(pageUrl).origin;
  const answer = await fetch(new URL(action.replaceAll("&amp;", "&"), origin), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin },
    body: new URLSearchParams({ token: hidden("token"), csrf: hidden("csrf"), api_key: apiKey }).toString(),
  });
  return { status: answer.status, html: await answer.text() };
}

/** Answers for `runInProcess`'s prompter, in order: a string for a secret, a boolean for a confirm, undefined to cancel. */
export type PromptAnswer = string | boolean | undefined;

/**
 * Runs `main()` in this process against the sandbox's daemon, as if stdin were a terminal (unless
 * `stdinIsTty: false`), with scripted prompt answers: for the interactive paths a spawned CLI
 * cannot reach without a pseudo-terminal. `asked` lists the prompts shown.
 */
export async function runInProcess(
  sandbox: SvcSandbox,
  args: string[],
  options: { answers?: PromptAnswer[]; stdinIsTty?: boolean; stdin?: string } = {},
): Promise<CliResult & { asked: string[] }> {
  const { main } = await import("../../src/cli/main.ts");
  const answers = [...(options.answers ?? [])];
  const asked: string[] = [];
  const take = (message: string, kind: "string" | "boolean") => {
    asked.push(message);
    if (answers.length === 0) throw new Error(`unexpected prompt: ${message}`);
    const answer = answers.shift();
    if (answer !== undefined && typeof answer !== kind)
      throw new Error(`expected a ${kind} answer for: ${message}`);
    return answer;
  };
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: sandbox.env,
    stdinIsTty: options.stdinIsTty ?? true,
    stdoutIsTty: false,
    prompter: {
      secret: async (message) => take(message, "string") as string | undefined,
      confirm: async (message) => take(message, "boolean") as boolean | undefined,
      text: async (message) => take(message, "string") as string | undefined,
      readLine: async () => options.stdin ?? "",
      readAll: async () => options.stdin ?? "",
    },
  });
  return { code, stdout, stderr, asked };
}
