import { DaemonClient } from "../src/client/daemon-client.ts";
import { registerIdentity } from "../src/client/session.ts";
import type { HomeLayout } from "../src/core/paths.ts";
import { IdentityFiles, type LocalIdentity } from "../src/identity/identity-files.ts";
import { signPopToken } from "../src/identity/pop-sign.ts";

/**
 * A fresh identity in the sandbox's identity directory, registered with the daemon and claimed
 * locally (this process can read the daemon's bootstrap secret, as the CLI can).
 */
export async function claimedIdentity(
  layout: HomeLayout,
  baseUrl: string,
): Promise<{ identity: LocalIdentity; client: DaemonClient }> {
  const identity = new IdentityFiles(layout.identities).create();
  const client = new DaemonClient({ baseUrl, identity });
  const record = await registerIdentity(client, identity, layout);
  if (!record.principal_id)
    throw new Error(`the bench identity ${identity.handle} was registered but not claimed`);
  return { identity, client };
}

/** `Authorization` values for GET `pathAndQuery`, a fresh token (new jti, current iat) per call. */
export function popAuthorizer(identity: LocalIdentity, pathAndQuery: string): () => string {
  const { handle, did, privateKey } = identity;
  return () => `PoP ${signPopToken({ handle, did, privateKey, method: "GET", pathAndQuery })}`;
}

/** How many tokens one core of this (client) process signs per second, to show it is not the limit. */
export function signingRate(authorize: () => string, milliseconds = 500): number {
  const deadline = performance.now() + milliseconds;
  let count = 0;
  while (performance.now() < deadline) {
    authorize();
    count++;
  }
  return Math.round((count * 1000) / milliseconds);
}
