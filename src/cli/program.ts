import { Command } from "commander";
import { VERSION } from "../core/version.ts";
import { CliContext, type CliIo, type GlobalOptions } from "./context.ts";

export interface ProgramHandle {
  program: Command;
  /** The context of the command that ran (created on first use). */
  context(): CliContext | undefined;
  /** A non-zero exit code a command asked for without failing (e.g. doctor). */
  exitCode(): number;
}

type ContextFor = (command: Command) => CliContext;
type SetExitCode = (code: number) => void;
type Registrar = (program: Command, contextFor: ContextFor, setExitCode: SetExitCode, io: CliIo) => void;

/**
 * Each command group's module, loaded only when needed: a command loads its own group alone, so
 * `svc whoami` does not parse the code (and the packages) of `login`, `run` or `onboard`. Help, an
 * unknown command and `completion` load them all. The order is the order of `svc --help`.
 */
const GROUPS: Array<{ names: string[]; load: () => Promise<Registrar> }> = [
  { names: ["daemon"], load: async () => (await import("./commands/daemon.ts")).registerDaemonCommands },
  { names: ["whoami"], load: async () => (await import("./commands/whoami.ts")).registerWhoamiCommand },
  {
    names: ["doctor"],
    load: async () => {
      const { registerDoctorCommand } = await import("./commands/doctor.ts");
      return (program, contextFor, setExitCode) => registerDoctorCommand(program, contextFor, setExitCode);
    },
  },
  { names: ["agent"], load: async () => (await import("./commands/agent.ts")).registerAgentCommands },
  {
    names: ["login", "logout"],
    load: async () => (await import("./commands/login.ts")).registerLoginCommands,
  },
  {
    names: ["provider"],
    load: async () => (await import("./commands/provider.ts")).registerProviderCommands,
  },
  {
    names: ["connections"],
    load: async () => (await import("./commands/connections.ts")).registerConnectionsCommands,
  },
  {
    names: ["run"],
    load: async () => {
      const { registerRunCommand } = await import("./commands/run.ts");
      return (program, contextFor, setExitCode) => registerRunCommand(program, contextFor, setExitCode);
    },
  },
  { names: ["onboard"], load: async () => (await import("./commands/onboard.ts")).registerOnboardCommand },
  { names: ["log"], load: async () => (await import("./commands/log.ts")).registerLogCommand },
  {
    names: ["dashboard"],
    load: async () => (await import("./commands/dashboard.ts")).registerDashboardCommand,
  },
  {
    names: ["__names"],
    load: async () => {
      const { registerCompletionNamesCommand } = await import("./commands/completion-names.ts");
      return (program, _contextFor, _setExitCode, io) =>
        registerCompletionNamesCommand(program, io.env, io.stdout);
    },
  },
  {
    names: ["completion"],
    load: async () => {
      const { registerCompletionCommand } = await import("./commands/completion.ts");
      return (program, _contextFor, _setExitCode, io) => registerCompletionCommand(program, io.stdout);
    },
  },
];

/** Global options that take a value (the token after them is not the command). */
const VALUE_OPTIONS = new Set(["--log-file"]);

/** The command name in `argv` (the first word that is not a global option), if any. */
function commandName(argv: readonly string[]): string | undefined {
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index]!;
    if (token === "--") return undefined;
    if (!token.startsWith("-")) return token;
    if (VALUE_OPTIONS.has(token)) index++;
  }
  return undefined;
}

/** The `svc` command tree with the spec's global flags: the command group `argv` names, or all. */
export async function buildProgram(io: CliIo, argv: readonly string[] = []): Promise<ProgramHandle> {
  let context: CliContext | undefined;
  let exitCode = 0;
  const contextFor = (command: Command) => {
    context ??= new CliContext(io, command.optsWithGlobals<GlobalOptions>());
    return context;
  };
  const setExitCode = (code: number) => {
    exitCode = code;
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

  const name = commandName(argv);
  const named = GROUPS.find(
    (group) => name !== undefined && name !== "completion" && group.names.includes(name),
  );
  const registrars = await Promise.all((named ? [named] : GROUPS).map((group) => group.load()));
  for (const register of registrars) register(program, contextFor, setExitCode, io);

  for (const command of allCommands(program))
    command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  return { program, context: () => context, exitCode: () => exitCode };
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((sub) => [sub, ...allCommands(sub)]);
}
