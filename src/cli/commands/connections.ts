import type { Command } from "commander";
import type { Connection } from "../../api/connections.ts";
import { getConnection, listConnections } from "../../client/daemon-api.ts";
import type { CliContext } from "../context.ts";
import { describeCredential, parseConnectionName, segment, shortTime } from "../format.ts";

export async function runConnectionsList(context: CliContext, options: { provider?: string }): Promise<void> {
  const connections = await listConnections(await context.daemon(), options);
  if (context.out.options.json) {
    context.out.json(connections);
    return;
  }
  if (connections.length === 0) {
    context.out.status(
      `No connections${options.provider ? ` to ${options.provider}` : ""} yet; add one with \`svc login <provider>\``,
    );
    return;
  }
  context.out.table(
    ["PROVIDER", "CONNECTION", "DEFAULT", "STATUS", "CREDENTIAL", "UPDATED"],
    connections.map((connection) => [
      connection.provider,
      connection.connection,
      connection.is_default ? "*" : "",
      connection.status,
      describeCredential(connection.credential),
      shortTime(connection.updated_at),
    ]),
  );
}

/**
 * Always JSON: one connection record, secrets redacted unless --reveal. Without --connection it is
 * the provider's default connection.
 */
export async function runConnectionsInspect(
  context: CliContext,
  provider: string,
  options: { connection?: string; reveal?: boolean },
): Promise<void> {
  const reveal = Boolean(options.reveal);
  const record = await getConnection(await context.daemon(), provider, options.connection, { reveal });
  if (reveal) {
    context.out.warn(
      `printing the secret of ${provider} connection "${record.connection}" in plain text (the daemon audits this)`,
    );
  }
  context.out.json(record);
}

export async function runConnectionsSetDefault(
  context: CliContext,
  provider: string,
  connection: string,
): Promise<void> {
  const client = await context.daemon();
  const result = await client.post<Connection>(
    `/api/connections/${segment(provider)}/${segment(connection)}/default`,
  );
  if (context.out.options.json) {
    context.out.json(result);
    return;
  }
  context.out.status(
    `${context.out.colors.green("✓")} "${result.connection}" is now the default ${result.provider} connection`,
  );
}

export function registerConnectionsCommands(
  program: Command,
  contextFor: (command: Command) => CliContext,
): void {
  const connections = program.command("connections").description("Inspect and manage stored connections");
  connections
    .command("list", { isDefault: true })
    .description("Your connections, secrets redacted (the default subcommand)")
    .option("--provider <name>", "only this provider's connections")
    .action(async (options: { provider?: string }, command: Command) =>
      runConnectionsList(contextFor(command), options),
    );
  connections
    .command("inspect")
    .description(
      "One connection as JSON (the provider's default unless --connection); --reveal prints the secret",
    )
    .argument("<provider>", "provider name")
    .option(
      "--connection <name>",
      "connection name (default: the provider's default connection)",
      parseConnectionName,
    )
    .option("--reveal", "include the secret in the output")
    .action(async (provider: string, options: { connection?: string; reveal?: boolean }, command: Command) =>
      runConnectionsInspect(contextFor(command), provider, options),
    );
  connections
    .command("set-default")
    .description("Make a connection the provider's default")
    .argument("<provider>", "provider name")
    .argument("<connection>", "connection name", parseConnectionName)
    .action(async (provider: string, connection: string, _options, command: Command) =>
      runConnectionsSetDefault(contextFor(command), provider, connection),
    );
}
