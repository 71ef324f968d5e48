import type { Command } from "commander";
import { readClientConfig, updateClientConfig } from "../../client/config.ts";
import { registerIdentity } from "../../client/session.ts";
import { InvalidInputError } from "../../core/errors.ts";
import { IdentityFiles } from "../../identity/identity-files.ts";
import type { CliContext } from "../context.ts";

export async function runAgentCreate(
  context: CliContext,
  options: { handle?: string; use?: boolean },
): Promise<void> {
  const files = new IdentityFiles(context.layout.identities);
  const identity = files.create(options.handle);
  const config = readClientConfig(context.layout.clientConfig);
  const activate = options.use || !config.active_identity || !files.exists(config.active_identity);
  if (activate) updateClientConfig(context.layout.clientConfig, { active_identity: identity.handle });
  const registered = await registerIdentity(await context.daemonAs(identity), identity, context.layout);
  if (context.out.options.json) {
    context.out.json({ ...registered, active: activate, created_at: identity.createdAt });
    return;
  }
  context.out.status(`created agent identity ${identity.handle}${activate ? " (now active)" : ""}`);
  context.out.fields([
    ["handle", identity.handle],
    ["did", identity.did],
    [
      "principal",
      registered.principal_id ? `${registered.principal_id} (${registered.principal_role})` : "unclaimed",
    ],
  ]);
}

export function runAgentUse(context: CliContext, handle: string): void {
  const files = new IdentityFiles(context.layout.identities);
  if (!files.exists(handle)) {
    throw new InvalidInputError(`no local agent identity "${handle}"; see \`svc agent list\``);
  }
  updateClientConfig(context.layout.clientConfig, { active_identity: handle });
  if (context.out.options.json) context.out.json({ active_identity: handle });
  else context.out.status(`active agent identity: ${handle}`);
}

export function runAgentList(context: CliContext): void {
  const files = new IdentityFiles(context.layout.identities);
  const active = readClientConfig(context.layout.clientConfig).active_identity;
  const agents = files.list().map((handle) => {
    const identity = files.load(handle);
    return { handle, did: identity.did, created_at: identity.createdAt, active: handle === active };
  });
  if (context.out.options.json) {
    context.out.json(agents);
    return;
  }
  context.out.table(
    ["", "HANDLE", "DID", "CREATED"],
    agents.map((agent) => [agent.active ? "*" : "", agent.handle, agent.did, agent.created_at]),
  );
}

export function registerAgentCommands(program: Command, contextFor: (command: Command) => CliContext): void {
  const agent = program.command("agent").description("Manage local agent identities (Ed25519 keys)");
  agent
    .command("create")
    .description("Create a new agent keypair and register it with the daemon")
    .option("--handle <handle>", "handle to use instead of a generated one")
    .option("--use", "make it the active identity")
    .action(async (options: { handle?: string; use?: boolean }, command: Command) =>
      runAgentCreate(contextFor(command), options),
    );
  agent
    .command("use")
    .description("Switch the active local agent identity")
    .argument("<handle>", "handle of a local identity")
    .action((handle: string, _options, command: Command) => runAgentUse(contextFor(command), handle));
  agent
    .command("list")
    .description("List local agent identities")
    .action((_options, command: Command) => runAgentList(contextFor(command)));
}
