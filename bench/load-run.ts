/**
 * Runs bench/proxy-load.ts (keep-alive HTTPS load at a fixed concurrency) as a child and reads the
 * CPU time of the processes under test over exactly its measured phase. Shared by bench/proxy.ts
 * and bench/proxy-transport.ts.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ownCpuMs, processCpuMs } from "./cpu-time.ts";

/** The load generator script, to put at the end of a command line. */
export const LOAD = fileURLToPath(new URL("./proxy-load.ts", import.meta.url));

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);

export interface LoadResult {
  requests: number;
  failures: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** The load generator's own CPU time over the measured phase. */
  cpu_ms: number;
  injected?: number;
  /** CPU time per measured request, by process (µs). */
  cpu_us_per_request?: Record<string, number>;
}

/** Processes whose CPU time a measurement reports, by name: a pid, or `child` for the spawned one. */
export type Watched = Record<string, number | "child">;

function parseLoad(stdout: string): LoadResult {
  const line = stdout.trim().split("\n").at(-1) ?? "";
  return JSON.parse(line) as LoadResult;
}

/**
 * Runs a child asynchronously (the upstream lives in this process and must keep serving). Reads the
 * CPU time of `watched` and of this process (`upstream`) at the load generator's `measuring` and
 * `measured` lines; returns the child's stdout and those CPU times, in ms.
 */
function runAsync(
  command: string[],
  env: NodeJS.ProcessEnv,
  watched: Watched,
): Promise<{ stdout: string; cpuMs: Record<string, number> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { env, stdio: ["ignore", "pipe", "pipe"] });
    const read = (): Record<string, number | undefined> => ({
      upstream: ownCpuMs(),
      ...Object.fromEntries(
        Object.entries(watched).map(([name, pid]) => [
          name,
          processCpuMs(pid === "child" ? child.pid! : pid),
        ]),
      ),
    });
    let before: Record<string, number | undefined> = {};
    const cpuMs: Record<string, number> = {};
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      stderr += text;
      if (/^measuring$/m.test(text)) before = read();
      if (/^measured$/m.test(text)) {
        for (const [name, after] of Object.entries(read())) {
          const start = before[name];
          if (after !== undefined && start !== undefined) cpuMs[name] = after - start;
        }
      }
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), (SECONDS + WARMUP + 60) * 1000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, cpuMs });
      else reject(new Error(`${command.join(" ")} exited ${code}: ${stderr}`));
    });
  });
}

function loadSpec(url: string, concurrency: number): string {
  return JSON.stringify({ url, concurrency, seconds: SECONDS, warmupSeconds: WARMUP });
}

/** Runs the load generator under `command` (its argv ends with the load script) and reports per-request CPU. */
export async function load(
  command: string[],
  env: NodeJS.ProcessEnv,
  url: string,
  concurrency: number,
  watched: Watched = {},
): Promise<LoadResult> {
  const run = await runAsync(command, { ...env, BENCH_LOAD: loadSpec(url, concurrency) }, watched);
  const result = parseLoad(run.stdout);
  const perRequest = (ms: number) => Math.round((ms * 1000) / Math.max(result.requests, 1));
  const cpu = { load: result.cpu_ms, ...run.cpuMs };
  return {
    ...result,
    cpu_us_per_request: Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, perRequest(ms)])),
  };
}
