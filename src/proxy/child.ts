/**
 * Runs `svc run`'s command as a shell would: no shell in between (arguments arrive verbatim), the
 * terminal shared, the stop signals svc receives passed on, and the exit status a shell reports.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";

/** Signals meant to stop `svc run`: the command receives them and decides what they mean. */
export const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const;

export interface RunChildOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** "inherit" (default) shares svc's terminal; "pipe" exposes the streams on `child`. */
  stdio?: "inherit" | "pipe";
}

export interface RunningChild {
  child: ChildProcess;
  /** The exit status as a shell reports it: the exit code, 128 + signal number, 127 or 126. */
  exit: Promise<number>;
}

export function runChild(command: string, args: string[], options: RunChildOptions): RunningChild {
  const child = spawn(command, args, {
    env: options.env,
    cwd: options.cwd,
    stdio: options.stdio ?? "inherit",
  });
  const stopForwarding = forwardSignals(child);
  child.once("exit", stopForwarding);
  const exit = new Promise<number>((resolve) => {
    child.on("error", (error: NodeJS.ErrnoException) => {
      // Only a failed spawn leaves no pid; later errors come from kill(), and "close" reports the exit.
      if (child.pid !== undefined) return;
      stopForwarding();
      resolve(spawnFailure(command, error));
    });
    // "close" rather than "exit": piped output has been read to the end by then.
    child.once("close", (code, signal) => resolve(signal ? 128 + constants.signals[signal] : (code ?? 1)));
  });
  return { child, exit };
}

/** While the child runs, svc's own stop signals go to it instead of stopping svc. */
function forwardSignals(child: ChildProcess): () => void {
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
  return () => {
    for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
  };
}

/** Reports a command that could not start the way a shell does: 127 if not found, else 126. */
function spawnFailure(command: string, error: NodeJS.ErrnoException): number {
  const notFound = error.code === "ENOENT";
  const reason = notFound
    ? "command not found"
    : error.code === "EACCES"
      ? "permission denied"
      : error.message;
  process.stderr.write(`svc run: ${command}: ${reason}\n`);
  return notFound ? 127 : 126;
}
