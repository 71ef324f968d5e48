import type { Command } from "commander";
import { EXTERNAL_AUDIT_RATE } from "../../api/audit.ts";
import type { DaemonClient } from "../../client/daemon-client.ts";
import { InvalidInputError } from "../../core/errors.ts";
import { IdentityFiles } from "../../identity/identity-files.ts";
import type { CliContext } from "../context.ts";
import { createAgent } from "./agent.ts";

export interface RunOptions {
  /** The identity the run's proxy signs as: a local handle, or `new:<handle>` to create it. */
  agent?: string;
  /** With `--agent new:<handle>`: the new agent's scope. */
  allow?: string[];
  connection?: string[];
  denyUnmatched?: boolean;
  printCa?: boolean;
}

/** `--connection provider:name`, repeatable: the connection to use per provider. */
function connectionOverrides(values: readonly string[]): Map<string, string> {
  const overrides = new Map<string, string>();
  for (const value of values) {
    const match = /^([a-z0-9][a-z0-9_-]*):([A-Za-z0-9][A-Za-z0-9_.-]*)$/.exec(value);
    if (!match) throw new InvalidInputError(`--connection takes <provider>:<name>, not "${value}"`);
    overrides.set(match[1]!, match[2]!);
  }
  return overrides;
}

const NEW_AGENT = "new:";

/**
 * The client the proxy signs with: the active identity, or the agent `--agent` names, so its
 * scope applies to the child and the audit log names it. `new:<handle>` creates the agent first,
 * limited to `--allow` (set by the active identity).
 */
async function runClient(context: CliContext, options: RunOptions): Promise<DaemonClient> {
  const agent = options.agent;
  if (agent === undefined) {
    if (options.allow) throw new InvalidInputError("--allow goes with --agent new:<handle>");
    return context.daemon();
  }
  if (agent.startsWith(NEW_AGENT)) {
    const handle = agent.slice(NEW_AGENT.length);
    if (!handle) throw new InvalidInputError("--agent new:<handle> needs a handle, e.g. new:claude");
    const files = new IdentityFiles(context.layout.identities);
    if (files.exists(handle)) {
      throw new InvalidInputError(`the agent "${handle}" exists already; run with \`--agent ${handle}\``);
    }
    const created = await createAgent(context, {
      handle,
      ...(options.allow ? { allow: options.allow } : {}),
    });
    context.out.warn(
      `svc run: created agent ${handle} (scope: ${created.scope?.join(", ") ?? "unrestricted"})`,
    );
    return context.daemonAs(created.identity);
  }
  if (options.allow) {
    throw new InvalidInputError(
      `--allow only sets the scope of a new agent; change ${agent}'s with \`svc agent allow ${agent} ...\``,
    );
  }
  const files = new IdentityFiles(context.layout.identities);
  if (!files.exists(agent)) {
    throw new InvalidInputError(
      `no local agent identity "${agent}"; create it with \`svc agent create ${agent} --allow <providers>\` or run with --agent new:${agent}`,
    );
  }
  return context.daemonAs(files.load(agent));
}

/**
 * `svc run -- <command>`: the child's HTTPS goes through the proxy, which injects credentials
 * for matched hosts; the child's environment holds placeholders only. Returns the child's exit code.
 */
export async function runRun(context: CliContext, argv: string[], options: RunOptions): Promise<number> {
  // Loaded here, not at start-up: the certificate library would slow every other command.
  const [{ loadOrCreateCa }, { startProxySession }, { childEnvironment, NODE_PRELOAD }, { runChild }] =
    await Promise.all([
      import("../../proxy/ca.ts"),
      import("../../proxy/proxy-session.ts"),
      import("../../proxy/child-env.ts"),
      import("../../proxy/child.ts"),
    ]);
  if (options.printCa) {
    const ca = await loadOrCreateCa(context.layout.proxy);
    context.out.line(ca.certPath);
    return 0;
  }
  const [command, ...args] = argv;
  if (!command) throw new InvalidInputError("name the command to run: svc run -- <command> [args...]");
  const overrides = connectionOverrides(options.connection ?? []);
  // The proxy goes on asking the daemon for as long as the child runs.
  const client = (await runClient(context, options)).withKeepAlive();
  const session = await startProxySession({
    client,
    proxyDir: context.layout.proxy,
    env: context.io.env,
    connections: overrides,
    denyUnmatched: Boolean(options.denyUnmatched),
    notice: (message) => context.out.warn(`svc run: ${message}`),
  });
  context.log.debug("proxy listening", { url: session.url });
  const { env } = childEnvironment({
    nodePreload: NODE_PRELOAD,
    base: context.io.env,
    proxyUrl: session.childProxyUrl,
    caBundlePath: session.caBundlePath,
    placeholders: session.placeholders,
    defaults: session.defaults,
  });
  let code: number;
  try {
    code = await runChild(command, args, { env }).exit;
  } finally {
    const { dropped, rateLimited } = await session.close();
    if (dropped > 0) {
      const why = rateLimited
        ? ` (it takes at most ${EXTERNAL_AUDIT_RATE.max} proxy events per minute from one identity)`
        : "";
      context.out.warn(`${dropped} audit events of this run could not be delivered to the daemon${why}`);
    }
  }
  return code;
}

export function registerRunCommand(
  program: Command,
  contextFor: (command: Command) => CliContext,
  setExit: (code: number) => void,
): void {
  program
    .command("run")
    .description("Run a command behind the credential-injecting proxy: svc run -- <command> [args...]")
    .argument("[command...]", "the command and its arguments, after --")
    .option(
      "--connection <provider:name>",
      "use this connection for the provider (repeatable)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option("--agent <handle>", "sign as this agent identity (its scope applies); new:<handle> creates it")
    .option(
      "--allow <provider[:connection],...>",
      "with --agent new:<handle>: the providers or connections it may use (repeatable)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option("--deny-unmatched", "answer 403 for a provider's API when it has no connection")
    .option("--print-ca", "print the path of the proxy CA certificate and exit")
    .action(async (argv: string[], options: RunOptions, command: Command) => {
      const code = await runRun(contextFor(command), argv, options);
      if (code !== 0) setExit(code);
    });
}
