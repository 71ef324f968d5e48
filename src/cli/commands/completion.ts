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
    subcommands: command.commands.filter((sub) => sub.name() !== "help").map(treeOf),
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
_svc_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words="${top}"
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
_svc() {
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
  const lines = ["# svc fish completion: svc completion fish | source", "complete -c svc -f"];
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
