/** Reading `svc login --json` as it runs: its NDJSON progress lines, and waiting for one. */
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { RunningCli } from "./cli.ts";

/** A progress line: an auth session state, or the final `{error, message}`. */
export type LoginLine = AuthSession & { error?: string; message?: string };

/** The NDJSON lines `svc login --json` printed so far. */
export function loginLines(cli: RunningCli): LoginLine[] {
  return cli.output.stdout
    .split("\n")
    .filter((line) => line.trim().startsWith("{"))
    .map((line) => JSON.parse(line) as LoginLine);
}

/** Waits (bounded) until `svc login --json` printed a line that `match` accepts. */
export async function waitForLoginLine(
  cli: RunningCli,
  match: (line: LoginLine) => boolean,
  timeoutMs = 15_000,
): Promise<LoginLine> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = loginLines(cli).find(match);
    if (found) return found;
    if (Date.now() > deadline)
      throw new Error(`no matching state in: ${cli.output.stdout}${cli.output.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
