import type { Command } from "commander";
import {
  type AgentActivity,
  type AgentRecord,
  allowInScope,
  denyInScope,
  describeScope,
} from "../../api/agents.ts";
import { agentActivity, getAgent, listAgents, revokeAgent, setAgentScope } from "../../client/agents-api.ts";
import { readClientConfig, updateClientConfig } from "../../client/config.ts";
import { registerIdentity } from "../../client/session.ts";
import { InvalidInputError, SvcError } from "../../core/errors.ts";
import { IdentityFiles } from "../../identity/identity-files.ts";
import type { CliContext } from "../context.ts";

export interface AgentCreateOptions {
  handle?: string;
  use?: boolean;
  /** `--allow openai,github:work` (repeatable): create the agent with this scope. */
  allow?: string[];
}

/**
 * Creates and registers an identity. With `--allow`, the active identity (which must be
 * unrestricted) then limits the new one to that scope; a scoped agent never becomes active
 * unless `--use` says so, so the person's own commands keep their full access.
 */
export async function createAgent(context: CliContext, options: AgentCreateOptions) {
  const scope = options.allow ? allowInScope([], options.allow) : undefined;
  // The manager signs before the new identity exists, so it cannot be the new one.
  const manager = scope ? await context.daemon() : undefined;
  const files = new IdentityFiles(context.layout.identities);
  const identity = files.create(options.handle);
  const config = readClientConfig(context.layout.clientConfig);
  const activate =
    options.use || (!scope && (!config.active_identity || !files.exists(config.active_identity)));
  if (activate) updateClientConfig(context.layout.clientConfig, { active_identity: identity.handle });
  const registered = await registerIdentity(await context.daemonAs(identity), identity, context.layout);
  const agent = manager && scope ? await setAgentScope(manager, identity.handle, scope) : undefined;
  return { identity, registered, activate, scope: agent?.scope ?? null };
}

export async function runAgentCreate(context: CliContext, options: AgentCreateOptions): Promise<void> {
  const { identity, registered, activate, scope } = await createAgent(context, options);
  if (context.out.options.json) {
    context.out.json({ ...registered, active: activate, created_at: identity.createdAt, scope });
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
    ["scope", describeScope(scope)],
  ]);
}

function showAgent(context: CliContext, agent: AgentRecord, activity?: AgentActivity): void {
  if (context.out.options.json) {
    context.out.json(activity ? { ...agent, activity } : agent);
    return;
  }
  context.out.fields([
    ["handle", agent.handle],
    ["did", agent.did],
    ["principal", agent.principal_id ?? "unclaimed"],
    ["created", agent.created_at],
    ["last seen", agent.last_seen ?? "never"],
    ["scope", describeScope(agent.scope)],
    ["revoked", agent.revoked_at ? `${agent.revoked_at} by ${agent.revoked_by}` : "no"],
  ]);
  if (!activity) return;
  const rows = activity.last_7d.map((row) => {
    const day = activity.last_24h.find((r) => r.provider === row.provider && r.status === row.status);
    return [row.provider ?? "(none)", row.status, String(day?.count ?? 0), String(row.count)];
  });
  if (rows.length === 0) context.out.status("no requests through the proxy in the last 7 days");
  else context.out.table(["PROVIDER", "OUTCOME", "24H", "7D"], rows);
}

export async function runAgentShow(context: CliContext, handle: string): Promise<void> {
  const client = await context.daemon();
  const [agent, activity] = await Promise.all([getAgent(client, handle), agentActivity(client, handle)]);
  showAgent(context, agent, activity);
}

export async function runAgentAllow(
  context: CliContext,
  handle: string,
  entries: string[],
  options: { all?: boolean },
): Promise<void> {
  if (!options.all && entries.length === 0) {
    throw new InvalidInputError("name what the agent may use (openai, github:work), or pass --all");
  }
  const client = await context.daemon();
  const current = await getAgent(client, handle);
  const scope = options.all ? null : allowInScope(current.scope, entries);
  const agent = await setAgentScope(client, handle, scope);
  if (!context.out.options.json) context.out.status(`${handle} may now use: ${describeScope(agent.scope)}`);
  showAgent(context, agent);
}

export async function runAgentDeny(context: CliContext, handle: string, entries: string[]): Promise<void> {
  const client = await context.daemon();
  const current = await getAgent(client, handle);
  const agent = await setAgentScope(client, handle, denyInScope(current.scope, entries));
  if (!context.out.options.json) context.out.status(`${handle} may now use: ${describeScope(agent.scope)}`);
  showAgent(context, agent);
}

export async function runAgentRevoke(context: CliContext, handle: string): Promise<void> {
  const agent = await revokeAgent(await context.daemon(), handle);
  if (!context.out.options.json) {
    context.out.status(
      `revoked ${handle}: its next request is refused, and its key can never be registered again`,
    );
  }
  showAgent(context, agent);
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

/** What the daemon knows of the local agents, or why it could not say. */
async function daemonRecords(
  context: CliContext,
): Promise<{ records: Map<string, AgentRecord> } | { unknown: string }> {
  try {
    const agents = await listAgents(await context.daemon());
    return { records: new Map(agents.map((agent) => [agent.handle, agent])) };
  } catch (error) {
    if (error instanceof SvcError) return { unknown: error.message };
    throw error;
  }
}

/**
 * The local identities, with what the daemon says of each (scope, last use, revocation) when it
 * answers: a list without the daemon still shows the keys on this machine.
 */
export async function runAgentList(context: CliContext): Promise<void> {
  const files = new IdentityFiles(context.layout.identities);
  const active = readClientConfig(context.layout.clientConfig).active_identity;
  const handles = files.list();
  const known =
    handles.length > 0 ? await daemonRecords(context) : { records: new Map<string, AgentRecord>() };
  if ("unknown" in known) context.out.warn(`scope and last use unknown: ${known.unknown}`);
  const agents = handles.map((handle) => {
    const identity = files.load(handle);
    const record = "records" in known ? known.records.get(handle) : undefined;
    return {
      handle,
      did: identity.did,
      created_at: identity.createdAt,
      active: handle === active,
      // Absent when the daemon did not answer, or does not show this identity to the active one.
      ...(record ? { scope: record.scope, last_seen: record.last_seen, revoked_at: record.revoked_at } : {}),
    };
  });
  if (context.out.options.json) {
    context.out.json(agents);
    return;
  }
  const scopeOf = (agent: (typeof agents)[number]) => {
    if (!("scope" in agent)) return "?";
    return agent.revoked_at ? `revoked ${agent.revoked_at}` : describeScope(agent.scope ?? null);
  };
  context.out.table(
    ["", "HANDLE", "SCOPE", "LAST SEEN", "DID"],
    agents.map((agent) => [
      agent.active ? "*" : "",
      agent.handle,
      scopeOf(agent),
      "last_seen" in agent ? (agent.last_seen ?? "never") : "?",
      agent.did,
    ]),
  );
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function registerAgentCommands(program: Command, contextFor: (command: Command) => CliContext): void {
  const agent = program.command("agent").description("Manage local agent identities (Ed25519 keys)");
  agent
    .command("create")
    .description("Create a new agent keypair and register it with the daemon")
    .argument("[handle]", "handle to use instead of a generated one")
    .option("--handle <handle>", "handle to use instead of a generated one")
    .option("--use", "make it the active identity")
    .option(
      "--allow <provider[:connection],...>",
      "limit it to these providers or connections (repeatable); set by the active identity",
      collect,
    )
    .action(async (handle: string | undefined, options: AgentCreateOptions, command: Command) =>
      runAgentCreate(contextFor(command), { ...options, handle: handle ?? options.handle }),
    );
  agent
    .command("show")
    .description("Show an agent's scope, revocation, last use and requests per provider (24 h, 7 days)")
    .argument("<handle>", "the agent's handle")
    .action((handle: string, _options, command: Command) => runAgentShow(contextFor(command), handle));
  agent
    .command("allow")
    .description(
      "Let an agent use these providers or connections (an unrestricted agent becomes limited to them)",
    )
    .argument("<handle>", "the agent's handle")
    .argument("[entries...]", "provider or provider:connection, e.g. openai github:work")
    .option("--all", "remove the scope: the agent may use every connection again")
    .action((handle: string, entries: string[], options: { all?: boolean }, command: Command) =>
      runAgentAllow(contextFor(command), handle, entries, options),
    );
  agent
    .command("deny")
    .description("Take providers or connections out of an agent's scope")
    .argument("<handle>", "the agent's handle")
    .argument("<entries...>", "provider or provider:connection")
    .action((handle: string, entries: string[], _options, command: Command) =>
      runAgentDeny(contextFor(command), handle, entries),
    );
  agent
    .command("revoke")
    .description("Revoke an agent for good: its next request is refused, on every daemon replica")
    .argument("<handle>", "the agent's handle")
    .action((handle: string, _options, command: Command) => runAgentRevoke(contextFor(command), handle));
  agent
    .command("use")
    .description("Switch the active local agent identity")
    .argument("<handle>", "handle of a local identity")
    .action((handle: string, _options, command: Command) => runAgentUse(contextFor(command), handle));
  agent
    .command("list")
    .description("List local agent identities, with each one's scope and last use")
    .action((_options, command: Command) => runAgentList(contextFor(command)));
}
