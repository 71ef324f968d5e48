import { type Command, InvalidArgumentError } from "commander";

interface CommandTree {
  name: string;
  options: string[];
  subcommands: CommandTree[];
}

function treeOf(command: Command): CommandTree {
  return {
    name: command.name(),
    options: command.options.flatMap((option) =>
      [option.long, option.short].filter((flag): flag is string => Boolean(flag)),
    ),
    // `help` is commander's; `__names` is the scripts' own helper.
    subcommands: command.commands
      .filter((sub) => sub.name() !== "help" && !sub.name().startsWith("__"))
      .map(treeOf),
  };
}

/** Pairs of a command and one of its subcommands that has options (the third word's completions). */
function nested(tree: CommandTree): Array<{ path: string; options: string[] }> {
  return tree.subcommands.flatMap((sub) =>
    sub.subcommands
      .filter((child) => child.options.length > 0)
      .map((child) => ({ path: `${sub.name} ${child.name}`, options: child.options })),
  );
}

/*
 * Provider and connection names come from the daemon through `svc __names` (hidden): which words
 * take which names is written out per shell below. It prints nothing when the daemon is down.
 */

function bash(tree: CommandTree): string {
  const cases = tree.subcommands
    .map((sub) => {
      const words = [...sub.subcommands.map((s) => s.name), ...sub.options].join(" ");
      return `    ${sub.name}) words="${words}" ;;`;
    })
    .join("\n");
  const nestedCases = nested(tree)
    .map(({ path, options }) => `      "${path}") words="${options.join(" ")}" ;;`)
    .join("\n");
  const top = [...tree.subcommands.map((sub) => sub.name), ...tree.options].join(" ");
  return `# svc bash completion: eval "$(svc completion bash)"
_svc_names() { svc __names "$@" 2>/dev/null; }
_svc_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" words="${top}"
  case "$prev" in
    --provider) COMPREPLY=($(compgen -W "$(_svc_names providers)" -- "$cur")); return ;;
    --connection) COMPREPLY=($(compgen -W "$(_svc_names connections)" -- "$cur")); return ;;
  esac
  if [ "$COMP_CWORD" -ge 2 ]; then
    case "\${COMP_WORDS[1]}" in
${cases}
    esac
  fi
  if [ "$COMP_CWORD" -ge 3 ]; then
    case "\${COMP_WORDS[1]} \${COMP_WORDS[2]}" in
${nestedCases}
    esac
  fi
  if [[ "$cur" != -* ]]; then
    case "$COMP_CWORD \${COMP_WORDS[1]} \${COMP_WORDS[2]}" in
      "2 login "*) words="$(_svc_names providers)" ;;
      "2 logout "*) words="$(_svc_names connected)" ;;
      "3 provider inspect"|"3 provider remove") words="$(_svc_names providers)" ;;
      "3 provider revoke"|"3 connections inspect"|"3 connections set-default") words="$(_svc_names connected)" ;;
      "4 connections set-default") words="$(_svc_names connections "\${COMP_WORDS[3]}")" ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _svc_complete svc
`;
}

function zsh(tree: CommandTree): string {
  const cases = tree.subcommands
    .map(
      (sub) =>
        `    ${sub.name}) compadd -- ${[...sub.subcommands.map((s) => s.name), ...sub.options].join(" ")} ;;`,
    )
    .join("\n");
  const nestedCases = nested(tree)
    .map(({ path, options }) => `      "${path}") compadd -- ${options.join(" ")}; return ;;`)
    .join("\n");
  return `#compdef svc
# svc zsh completion: eval "$(svc completion zsh)"
_svc_names() { svc __names "$@" 2>/dev/null }
_svc() {
  case "\${words[CURRENT-1]}" in
    --provider) compadd -- \${(f)"$(_svc_names providers)"}; return ;;
    --connection) compadd -- \${(f)"$(_svc_names connections)"}; return ;;
  esac
  if [[ "\${words[CURRENT]}" != -* ]]; then
    case "$CURRENT \${words[2]} \${words[3]}" in
      "3 login "*) compadd -- \${(f)"$(_svc_names providers)"}; return ;;
      "3 logout "*) compadd -- \${(f)"$(_svc_names connected)"}; return ;;
      "4 provider inspect"*|"4 provider remove"*) compadd -- \${(f)"$(_svc_names providers)"}; return ;;
      "4 provider revoke"*|"4 connections inspect"*|"4 connections set-default"*)
        compadd -- \${(f)"$(_svc_names connected)"}; return ;;
      "5 connections set-default"*) compadd -- \${(f)"$(_svc_names connections "\${words[4]}")"}; return ;;
    esac
  fi
  if (( CURRENT == 2 )); then
    compadd -- ${[...tree.subcommands.map((sub) => sub.name), ...tree.options].join(" ")}
    return
  fi
  if (( CURRENT >= 4 )); then
    case "\${words[2]} \${words[3]}" in
${nestedCases}
    esac
  fi
  case "\${words[2]}" in
${cases}
  esac
}
compdef _svc svc
`;
}

function fish(tree: CommandTree): string {
  const words = (count: number) => `test (count (commandline -opc)) -eq ${count}`;
  const names = (condition: string, kind: string) =>
    `complete -c svc -n "${condition}" -a "(__svc_names ${kind})"`;
  const lines = [
    "# svc fish completion: svc completion fish | source",
    "complete -c svc -f",
    "function __svc_names; svc __names $argv 2>/dev/null; end",
    names(`__fish_seen_subcommand_from login; and ${words(2)}`, "providers"),
    names(`__fish_seen_subcommand_from logout; and ${words(2)}`, "connected"),
    names(
      `__fish_seen_subcommand_from provider; and __fish_seen_subcommand_from inspect remove; and ${words(3)}`,
      "providers",
    ),
    names(
      `__fish_seen_subcommand_from provider; and __fish_seen_subcommand_from revoke; and ${words(3)}`,
      "connected",
    ),
    names(
      `__fish_seen_subcommand_from connections; and __fish_seen_subcommand_from inspect set-default; and ${words(3)}`,
      "connected",
    ),
    names(`__fish_seen_subcommand_from set-default; and ${words(4)}`, "connections (commandline -opc)[4]"),
    'complete -c svc -l provider -x -a "(__svc_names providers)"',
    'complete -c svc -l connection -x -a "(__svc_names connections)"',
  ];
  for (const sub of tree.subcommands) {
    lines.push(`complete -c svc -n __fish_use_subcommand -a ${sub.name}`);
    for (const option of sub.options.filter((flag) => flag.startsWith("--"))) {
      lines.push(`complete -c svc -n "__fish_seen_subcommand_from ${sub.name}" -l ${option.slice(2)}`);
    }
    for (const child of sub.subcommands) {
      lines.push(`complete -c svc -n "__fish_seen_subcommand_from ${sub.name}" -a ${child.name}`);
      for (const option of child.options.filter((flag) => flag.startsWith("--"))) {
        lines.push(
          `complete -c svc -n "__fish_seen_subcommand_from ${sub.name}; and __fish_seen_subcommand_from ${child.name}" -l ${option.slice(2)}`,
        );
      }
    }
  }
  for (const option of tree.options.filter((flag) => flag.startsWith("--"))) {
    lines.push(`complete -c svc -l ${option.slice(2)}`);
  }
  return `${lines.join("\n")}\n`;
}

const SHELLS = { bash, zsh, fish } as const;

export function registerCompletionCommand(program: Command, write: (text: string) => void): void {
  program
    .command("completion")
    .description("Print a shell completion script (bash, zsh or fish)")
    .argument("<shell>", "bash, zsh or fish", (value: string) => {
      if (!(value in SHELLS)) throw new InvalidArgumentError("must be bash, zsh or fish");
      return value as keyof typeof SHELLS;
    })
    .action((shell: keyof typeof SHELLS) => write(SHELLS[shell](treeOf(program))));
}
