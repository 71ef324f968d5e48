import type { Command } from "commander";
import type { Health, Whoami } from "../../api/health.ts";
import type { CliContext } from "../context.ts";

export async function runWhoami(context: CliContext): Promise<void> {
  const client = await context.daemon();
  const [whoami, health] = await Promise.all([
    client.get<Whoami>("/api/whoami"),
    context.health ?? client.get<Health>("/api/health", { auth: "none" }),
  ]);
  const encryption = {
    configured_encryption_mode: health.configured_encryption_mode,
    effective_encryption_source: health.effective_encryption_source,
    encryption_backend: health.encryption_backend,
  };
  if (context.out.options.json) {
    context.out.json({ ...whoami, daemon_url: client.baseUrl, ...encryption });
    return;
  }
  context.out.fields([
    ["identity", whoami.identity],
    ["did", whoami.did],
    ["principal", whoami.principal_id ? `${whoami.principal_id} (${whoami.principal_role})` : "unclaimed"],
    ["vault", whoami.vault_id],
    ["home", whoami.home],
    ["daemon", client.baseUrl],
    ["encryption", `${encryption.encryption_backend} (mode ${encryption.configured_encryption_mode})`],
  ]);
}

export function registerWhoamiCommand(program: Command, contextFor: (command: Command) => CliContext): void {
  program
    .command("whoami")
    .description("Show the active agent identity, its principal and vault, and the encryption mode")
    .action(async (_options, command: Command) => runWhoami(contextFor(command)));
}
