import { isatty } from "node:tty";
import { CommanderError } from "commander";
import { ERROR_CATALOGUE, InvalidInputError, SvcError, UnexpectedError } from "../core/errors.ts";
import type { CliIo } from "./context.ts";
import { Output } from "./output.ts";
import { buildProgram } from "./program.ts";

const COMMANDER_SUCCESS = new Set(["commander.helpDisplayed", "commander.version", "commander.help"]);

/** Runs `svc` with `argv` (without node and script) and returns the exit code. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  const handle = await buildProgram(io, argv);
  const json = argv.includes("--json");
  try {
    await handle.program.parseAsync(argv, { from: "user" });
    return handle.exitCode();
  } catch (raw) {
    if (raw instanceof CommanderError) {
      if (COMMANDER_SUCCESS.has(raw.code) || raw.exitCode === 0) return 0;
      // Commander already printed its message to stderr; --json callers also get it on stdout.
      const error = new InvalidInputError(raw.message.replace(/^error: /, ""));
      if (json) io.stdout(`${JSON.stringify(error.toBody())}\n`);
      return ERROR_CATALOGUE.InvalidInputError.exitCode;
    }
    const error = raw instanceof SvcError ? raw : new UnexpectedError(describe(raw), { cause: raw });
    const context = handle.context();
    context?.log.log("error", "command failed", { error: error.errorName, message: error.message });
    const out = context?.out ?? new Output({ json, quiet: false, color: false }, io.stdout, io.stderr);
    out.error(error);
    return error.exitCode;
  }
}

/** The real process's streams. A closed stdout (`svc provider list | head -1`) ends the process quietly. */
function processIo(): CliIo {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
  return {
    stdout: (text: string) => void process.stdout.write(text),
    stderr: (text: string) => void process.stderr.write(text),
    env: process.env,
    // Not process.stdin.isTTY: creating the stdin stream costs about 6 ms, and most commands never read it.
    stdinIsTty: isatty(0),
    stdoutIsTty: Boolean(process.stdout.isTTY),
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
