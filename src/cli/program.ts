import { Command } from "commander";
import { VERSION } from "../core/version.ts";
import { registerAgentCommands } from "./commands/agent.ts";
import { registerCompletionCommand } from "./commands/completion.ts";
import { registerConnectionsCommands } from "./commands/connections.ts";
import { registerDaemonCommands } from "./commands/daemon.ts";
import { registerDashboardCommand } from "./commands/dashboard.ts";
import { registerDoctorCommand } from "./commands/doctor.ts";
import { registerLogCommand } from "./commands/log.ts";
import { registerLoginCommands } from "./commands/login.ts";
import { registerOnboardCommand } from "./commands/onboard.ts";
import { registerProviderCommands } from "./commands/provider.ts";
import { registerRunCommand } from "./commands/run.ts";
import { registerWhoamiCommand } from "./commands/whoami.ts";
import { CliContext, type CliIo, type GlobalOptions } from "./context.ts";

export interface ProgramHandle {
  program: Command;
  /** The context of the command that ran (created on first use). */
  context(): CliContext | undefined;
  /** A non-zero exit code a command asked for without failing (e.g. doctor). */
  exitCode(): number;
}

/** The `svc` command tree with the spec's global flags. */
export function buildProgram(io: CliIo): ProgramHandle {
  let context: CliContext | undefined;
  let exitCode = 0;
  const contextFor = (command: Command) => {
    context ??= new CliContext(io, command.optsWithGlobals<GlobalOptions>());
    return context;
  };

  const program = new Command("svc")
    .description("Local credential daemon for developers and AI agents")
    .version(VERSION, "-v, --version", "print the version")
    .option("--json", "machine-readable output")
    .option("--quiet", "suppress banners and status messages (data rows still print)")
    .option("--no-color", "disable ANSI colors (NO_COLOR is honoured too)")
    .option("--verbose", "DEBUG logging to stderr")
    .option("--log-file <path>", 'rotating client debug log ("" disables it)')
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });

  registerDaemonCommands(program, contextFor);
  registerWhoamiCommand(program, contextFor);
  registerDoctorCommand(program, contextFor, (code) => {
    exitCode = code;
  });
  registerAgentCommands(program, contextFor);
  registerLoginCommands(program, contextFor);
  registerProviderCommands(program, contextFor);
  registerConnectionsCommands(program, contextFor);
  registerRunCommand(program, contextFor, (code) => {
    exitCode = code;
  });
  registerOnboardCommand(program, contextFor);
  registerLogCommand(program, contextFor);
  registerDashboardCommand(program, contextFor);
  registerCompletionCommand(program, io.stdout);

  for (const command of allCommands(program))
    command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  return { program, context: () => context, exitCode: () => exitCode };
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((sub) => [sub, ...allCommands(sub)]);
}
