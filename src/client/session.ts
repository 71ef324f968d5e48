import { join } from "node:path";
import type { RegisteredIdentityRecord } from "../api/identities.ts";
import { readBootstrapSecret } from "../core/bootstrap-secret.ts";
import { withFileLockSync } from "../core/file-lock.ts";
import type { HomeLayout } from "../core/paths.ts";
import { IdentityFiles, type LocalIdentity } from "../identity/identity-files.ts";
import { localClaimProof } from "../identity/local-claim.ts";
import { resolveBaseUrl } from "./base-url.ts";
import { readClientConfig, updateClientConfig } from "./config.ts";
import { DaemonClient, type DaemonClientOptions } from "./daemon-client.ts";

/** The active local identity (`active_identity` in `client/config.json`), or undefined when there is none. */
export function loadActiveIdentity(layout: HomeLayout): LocalIdentity | undefined {
  const files = new IdentityFiles(layout.identities);
  const config = readClientConfig(layout.clientConfig);
  if (config.active_identity && files.exists(config.active_identity))
    return files.load(config.active_identity);
  return undefined;
}

/**
 * The active local identity, created on first use (the CLI's behaviour; the library only loads).
 * Creation holds a lock in the home, so CLI processes started together on a fresh home agree on one.
 */
export function activeIdentity(layout: HomeLayout): LocalIdentity {
  const existing = loadActiveIdentity(layout);
  if (existing) return existing;
  return withFileLockSync(
    join(layout.client, "identity.lock"),
    { purpose: "creating the local identity" },
    () => {
      const latest = loadActiveIdentity(layout);
      if (latest) return latest;
      const created = new IdentityFiles(layout.identities).create();
      updateClientConfig(layout.clientConfig, { active_identity: created.handle });
      return created;
    },
  );
}

/**
 * Registers the identity with the daemon; when this process can read the daemon's bootstrap secret
 * (a loopback daemon sharing SVC_HOME) it also proves that, which claims the identity locally.
 */
export async function registerIdentity(
  client: DaemonClient,
  identity: LocalIdentity,
  layout: HomeLayout,
): Promise<RegisteredIdentityRecord> {
  const secret = readBootstrapSecret(layout.bootstrapSecret);
  return client.post<RegisteredIdentityRecord>("/api/identities", {
    handle: identity.handle,
    did: identity.did,
    ...(secret ? { local_claim_proof: localClaimProof(secret, identity.did) } : {}),
  });
}

export interface ClientForOptions {
  /** The daemon to talk to; by default `SVC_BASE_URL`, the saved `daemon_base_url`, then loopback. */
  baseUrl?: string;
  timeoutMs?: number;
  trace?: DaemonClientOptions["trace"];
  claim?: DaemonClientOptions["claim"];
  keepAlive?: DaemonClientOptions["keepAlive"];
}

/** A client for the configured daemon, signing as `identity`, that registers it when needed. */
export function clientFor(
  layout: HomeLayout,
  env: NodeJS.ProcessEnv,
  identity: LocalIdentity,
  options: ClientForOptions = {},
): DaemonClient {
  const base: DaemonClientOptions = {
    baseUrl: options.baseUrl ?? resolveBaseUrl(env, readClientConfig(layout.clientConfig)),
    identity,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.trace ? { trace: options.trace } : {}),
    ...(options.keepAlive === undefined ? {} : { keepAlive: options.keepAlive }),
  };
  // Registration goes through a client without the hook: its own refusal must not register again.
  const registrar = new DaemonClient(base);
  return new DaemonClient({
    ...base,
    ...(options.claim ? { claim: options.claim } : {}),
    register: async () => {
      await registerIdentity(registrar, identity, layout);
    },
  });
}
