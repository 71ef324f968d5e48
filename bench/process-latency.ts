import { spawnSync } from "node:child_process";
import { type Summary, summarize } from "./stats.ts";

export interface TimedCommand {
  label: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/**
 * Wall-clock time of whole processes (spawn to exit, as a shell user sees it), each run
 * `warmups + runs` times in sequence with the same Node binary as this one; warm-ups are discarded.
 */
export function timeProcess(command: TimedCommand, runs: number, warmups: number): Summary {
  const samples: number[] = [];
  for (let i = 0; i < warmups + runs; i++) {
    const start = process.hrtime.bigint();
    const result = spawnSync(process.execPath, command.args, {
      env: command.env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 30_000,
    });
    const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.error) throw result.error;
    if (result.status !== 0) {
      throw new Error(`${command.label} exited ${result.status}: ${result.stderr}${result.stdout}`);
    }
    if (i >= warmups) samples.push(elapsed);
  }
  return summarize(samples);
}
