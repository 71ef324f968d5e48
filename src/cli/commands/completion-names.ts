import type { Command } from "commander";
import { resolveBaseUrl } from "../../client/base-url.ts";
import { readClientConfig } from "../../client/config.ts";
import { listConnections, listProviders } from "../../client/daemon-api.ts";
import { DaemonClient } from "../../client/daemon-client.ts";
import { loadActiveIdentity } from "../../client/session.ts";
import { homeLayout, resolveHome } from "../../core/paths.ts";

/** What the shell completion scripts ask for: every provider, connected providers, connection names. */
export const NAME_KINDS = ["providers", "connected", "connections"] as const;
type NameKind = (typeof NAME_KINDS)[number];

/** A shell waits for these names on every Tab: a daemon that is slow to answer is treated as down. */
const TIMEOUT_MS = 700;

/**
 * Names for shell completion, one per line, from the daemon. Never starts a daemon, never creates
 * or registers an identity, and prints nothing at all (exit 0) when any of that would be needed:
 * Tab must stay fast and quiet when the daemon is down.
 */
export async function completionNames(
  env: NodeJS.ProcessEnv,
  kind: NameKind,
  provider: string | undefined,
): Promise<string[]> {
  const layout = homeLayout(resolveHome(env));
  const identity = loadActiveIdentity(layout);
  if (!identity) return [];
  const client = new DaemonClient({
    baseUrl: resolveBaseUrl(env, readClientConfig(layout.clientConfig)),
    identity,
    timeoutMs: TIMEOUT_MS,
    keepAlive: false,
  });
  try {
    if (kind === "providers") return (await listProviders(client)).map((entry) => entry.name);
    const connections = await listConnections(client, provider ? { provider } : {});
    const names = connections.map((entry) => (kind === "connected" ? entry.provider : entry.connection));
    return [...new Set(names)];
  } catch {
    return [];
  }
}

/** `svc __names <kind> [provider]`: hidden, for the completion scripts. */
export function registerCompletionNamesCommand(
  program: Command,
  env: NodeJS.ProcessEnv,
  write: (text: string) => void,
): void {
  program
    .command("__names", { hidden: true })
    .argument("<kind>", NAME_KINDS.join(", "))
    .argument("[provider]", "only this provider's connections")
    .action(async (kind: string, provider: string | undefined) => {
      if (!(NAME_KINDS as readonly string[]).includes(kind)) return;
      const names = await completionNames(env, kind as NameKind, provider);
      if (names.length > 0) write(`${names.join("\n")}\n`);
    });
}
