import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import type { Connection, Revoked } from "../../api/connections.ts";
import type { RegisteredProvider, RemovedProvider } from "../../api/providers.ts";
import { getProvider, listConnections, listProviders } from "../../client/daemon-api.ts";
import { InputCancelledError, InvalidInputError, ProviderAlreadyRegisteredError } from "../../core/errors.ts";
import { writePrivateFile } from "../../core/secure-fs.ts";
import type { ProviderSummary } from "../../providers/schema.ts";
import { PROVIDER_NAME_PATTERN } from "../../providers/vocabulary.ts";
import type { CliContext } from "../context.ts";
import { plural, segment } from "../format.ts";
import { cancelled } from "../prompt.ts";

/** The largest provider file `register` reads (the daemon's own limit on a definition). */
export const MAX_PROVIDER_FILE_BYTES = 64 * 1024;

export interface ProviderListItem extends ProviderSummary {
  connections: string[];
  default_connection: string | null;
}

/** Every provider with the caller's connection names and default. */
async function providerItems(context: CliContext): Promise<ProviderListItem[]> {
  const client = await context.daemon();
  const [providers, connections] = await Promise.all([listProviders(client), listConnections(client)]);
  const byProvider = new Map<string, Connection[]>();
  for (const connection of connections) {
    const list = byProvider.get(connection.provider) ?? [];
    list.push(connection);
    byProvider.set(connection.provider, list);
  }
  return providers.map((provider) => {
    const mine = (byProvider.get(provider.name) ?? []).sort((a, b) =>
      a.connection.localeCompare(b.connection),
    );
    return {
      ...provider,
      connections: mine.map((connection) => connection.connection),
      default_connection: mine.find((connection) => connection.is_default)?.connection ?? null,
    };
  });
}

export async function runProviderList(context: CliContext): Promise<void> {
  const items = await providerItems(context);
  if (context.out.options.json) {
    context.out.json({
      bundled: items.filter((item) => item.source === "bundled"),
      custom: items.filter((item) => item.source === "custom"),
    });
    return;
  }
  const connected = items.filter((item) => item.connections.length > 0).length;
  context.out.header(`Providers: ${items.length} total, ${connected} connected`);
  context.out.table(
    ["NAME", "AUTH", "FLOW", "SOURCE", "CONNECTIONS"],
    items.map((item) => [
      item.name,
      item.auth_type,
      item.flow,
      item.source,
      item.connections.length === 0
        ? "-"
        : item.connections.map((name) => (name === item.default_connection ? `${name}*` : name)).join(", "),
    ]),
  );
}

/** Always JSON: the full definition and the caller's connections to it (secrets redacted). */
export async function runProviderInspect(context: CliContext, name: string): Promise<void> {
  const client = await context.daemon();
  const provider = await getProvider(client, name);
  const connections = await listConnections(client, { provider: provider.name });
  context.out.json({ provider, connections });
}

/** Reads and parses a provider file; every refusal names the file. */
function readProviderFile(path: string): { text: string; definition: unknown } {
  let size: number;
  try {
    const stats = statSync(path);
    if (!stats.isFile()) throw new InvalidInputError(`${path}: not a regular file`);
    size = stats.size;
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    throw new InvalidInputError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  if (size > MAX_PROVIDER_FILE_BYTES) {
    throw new InvalidInputError(
      `${path}: ${size} bytes is larger than the ${MAX_PROVIDER_FILE_BYTES / 1024} KiB a provider definition may have`,
    );
  }
  const text = readFileSync(path, "utf8");
  try {
    return { text, definition: JSON.parse(text) };
  } catch (error) {
    throw new InvalidInputError(`${path}: not valid JSON: ${jsonErrorWithPosition(error, text)}`);
  }
}

/** V8's JSON error, with a line and column when it gives only an offset, or none at all. */
function jsonErrorWithPosition(error: unknown, text: string): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/\(line \d+ column \d+\)/.test(message)) return message;
  const offset = Number(/at position (\d+)/.exec(message)?.[1] ?? text.length);
  const before = text.slice(0, offset).split("\n");
  const where = `line ${before.length} column ${before.at(-1)!.length + 1}`;
  return /at position \d+/.test(message)
    ? `${message} (${where})`
    : `${message} at position ${offset} (${where})`;
}

export interface RegisterOptions {
  force?: boolean;
  yes?: boolean;
}

/**
 * `svc provider register <path>`: the daemon validates and stores the definition (an invalid one is
 * refused naming each field); only once it accepted it is the file copied into `~/.svc/providers/`.
 * An existing name needs --force, or a "yes" on a terminal; --yes alone fails (exit 7).
 */
export async function runProviderRegister(
  context: CliContext,
  path: string,
  options: RegisterOptions,
): Promise<void> {
  const { text, definition } = readProviderFile(path);
  const client = await context.daemon();
  const register = (force: boolean) =>
    client.post<RegisteredProvider>(`/api/providers?force=${force}`, definition).catch((error: unknown) => {
      if (error instanceof InvalidInputError) throw new InvalidInputError(`${path}: ${error.message}`);
      throw error;
    });

  let result: RegisteredProvider;
  try {
    result = await register(Boolean(options.force));
  } catch (error) {
    if (!(error instanceof ProviderAlreadyRegisteredError) || options.force) throw error;
    const name = (definition as { name: string }).name;
    if (options.yes || !context.io.stdinIsTty) {
      throw new ProviderAlreadyRegisteredError(
        `a provider named "${name}" already exists; run \`svc provider register ${path} --force\` to replace it`,
      );
    }
    const replace = await context.prompter.confirm(
      `A provider named "${name}" already exists. Replace it with ${path}?`,
    );
    if (replace === undefined) throw cancelled("provider registration");
    if (!replace) throw new InputCancelledError(`provider registration cancelled; "${name}" was kept`);
    result = await register(true);
  }

  const copy = join(context.layout.providers, `${result.provider.name}.json`);
  writePrivateFile(copy, text);
  if (context.out.options.json) {
    context.out.json({ ...result, file: copy });
    return;
  }
  const how = result.overrides_bundled
    ? "overriding the bundled definition"
    : result.created
      ? "new custom provider"
      : "replaced the custom definition";
  context.out.status(
    `${context.out.colors.green("✓")} Registered provider ${result.provider.name} (${how}); copied to ${copy}`,
  );
}

/** `svc provider remove`: removes a custom provider (and its copy), or resets a bundled one. */
export async function runProviderRemove(context: CliContext, name: string): Promise<void> {
  const client = await context.daemon();
  const result = await client.request<RemovedProvider>("DELETE", `/api/providers/${segment(name)}`);
  let file: string | null = null;
  if (PROVIDER_NAME_PATTERN.test(result.name)) {
    const copy = join(context.layout.providers, `${result.name}.json`);
    try {
      rmSync(copy);
      file = copy;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  if (context.out.options.json) {
    context.out.json({ ...result, removed_file: file });
    return;
  }
  const check = context.out.colors.green("✓");
  const message = {
    removed: `${check} Removed the custom provider ${result.name}`,
    reset: `${check} Reset ${result.name} to the bundled definition`,
    unchanged: `${result.name} is already the bundled definition; nothing to remove`,
  }[result.result];
  context.out.status(file ? `${message} (deleted ${file})` : message);
}

/** `svc provider revoke`: removes every connection and client credential of the provider. */
export async function runProviderRevoke(context: CliContext, name: string): Promise<void> {
  const client = await context.daemon();
  const result = await client.post<Revoked>(`/api/connections/${segment(name)}/revoke`);
  if (context.out.options.json) {
    context.out.json(result);
    return;
  }
  const removed = result.removed_connections;
  context.out.status(
    removed.length === 0
      ? `${result.provider} had no connections${result.removed_client_credentials ? "; removed its client credentials" : ""}`
      : `${context.out.colors.green("✓")} Revoked ${result.provider}: removed ${plural(removed.length, "connection")} (${removed.join(", ")})${
          result.removed_client_credentials ? " and its client credentials" : ""
        }`,
  );
  if (result.remote.length > 0) {
    context.out.table(
      ["CONNECTION", "REMOTE", "MESSAGE"],
      result.remote.map((entry) => [entry.connection, entry.result, entry.message ?? ""]),
    );
  }
}

export function registerProviderCommands(
  program: Command,
  contextFor: (command: Command) => CliContext,
): void {
  const provider = program.command("provider").description("List, inspect, register and remove providers");
  provider
    .command("list")
    .description("All providers with your connections (* marks the default)")
    .action(async (_options, command: Command) => runProviderList(contextFor(command)));
  provider
    .command("inspect")
    .description("The provider definition and your connections to it, as JSON")
    .argument("<provider>", "provider name")
    .action(async (name: string, _options, command: Command) =>
      runProviderInspect(contextFor(command), name),
    );
  provider
    .command("register")
    .description("Register a custom provider from a JSON file (copied into ~/.svc/providers/)")
    .argument("<path>", "provider definition file (JSON, at most 64 KiB)")
    .option("--force", "replace an existing provider of the same name without asking")
    .option("--yes", "do not ask; fail (exit 7) if the provider exists")
    .action(async (path: string, options: RegisterOptions, command: Command) =>
      runProviderRegister(contextFor(command), path, options),
    );
  provider
    .command("remove")
    .description("Remove a custom provider, or reset a bundled one to its shipped definition")
    .argument("<provider>", "provider name")
    .action(async (name: string, _options, command: Command) => runProviderRemove(contextFor(command), name));
  provider
    .command("revoke")
    .description(
      "Remove every connection and client credential of a provider (remote revocation where supported)",
    )
    .argument("<provider>", "provider name")
    .action(async (name: string, _options, command: Command) => runProviderRevoke(contextFor(command), name));
}
