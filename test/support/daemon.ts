import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DaemonClient } from "../../src/client/daemon-client.ts";
import { registerIdentity } from "../../src/client/session.ts";
import { homeLayout } from "../../src/core/paths.ts";
import { type RunningDaemon, startDaemon } from "../../src/daemon/serve.ts";
import { IdentityFiles, type LocalIdentity } from "../../src/identity/identity-files.ts";
import { noKeyring } from "../../src/vault/master-key.ts";

export interface TestDaemon {
  daemon: RunningDaemon;
  layout: ReturnType<typeof homeLayout>;
  identity: LocalIdentity;
  client: DaemonClient;
  newIdentity(options?: { claim?: boolean }): Promise<{ identity: LocalIdentity; client: DaemonClient }>;
  stop(): Promise<void>;
}

/** A real daemon in this process on an ephemeral loopback port, with one claimed identity. */
export async function startTestDaemon(env: NodeJS.ProcessEnv = {}): Promise<TestDaemon> {
  const root = mkdtempSync(join(tmpdir(), "svc-daemon-"));
  const layout = homeLayout(join(root, "home"));
  const daemon = await startDaemon({
    layout,
    config: { host: "127.0.0.1", port: 0 },
    env: { SVC_ENCRYPTION_MODE: "local_key", ...env },
    keyring: noKeyring("no keyring in tests"),
    logger: false,
  });
  const files = new IdentityFiles(layout.identities);
  const newIdentity = async (options: { claim?: boolean } = {}) => {
    const identity = files.create();
    const client = new DaemonClient({ baseUrl: daemon.url, identity });
    if (options.claim === false) {
      await client.post("/api/identities", { handle: identity.handle, did: identity.did });
    } else {
      await registerIdentity(client, identity, layout);
    }
    return { identity, client };
  };
  const first = await newIdentity();
  return {
    daemon,
    layout,
    identity: first.identity,
    client: first.client,
    newIdentity,
    async stop() {
      await daemon.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
