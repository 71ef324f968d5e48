import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResolvedCredential } from "../../src/api/credentials.ts";
import { revokeAgent, setAgentScope } from "../../src/client/agents-api.ts";
import type { DaemonClient } from "../../src/client/daemon-client.ts";
import { AuthenticationFailedError, OperationNotAllowedError } from "../../src/core/errors.ts";
import { loginWithApiKey } from "../support/daemon.ts";
import { type Replica, type ReplicaSet, startReplicaSet } from "../support/replicas.ts";

/**
 * Hosted mode: a scope change or a revocation made on one replica holds on the very next request
 * to the other, with no wait for a notice to travel.
 */
let set: ReplicaSet;
let a: Replica;
let b: Replica;

beforeAll(async () => {
  set = await startReplicaSet({ count: 2 });
  [a, b] = set.replicas as [Replica, Replica];
  await loginWithApiKey(set.clientAt(a.url), "openai", `sk-proj-${randomBytes(16).toString("hex")}`);
}, 90_000);
afterAll(async () => {
  await set?.dispose();
});

const resolve = (client: DaemonClient) =>
  client.post<ResolvedCredential>("/api/credentials/resolve", { host: "api.openai.com" });
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.unreachable("the request should have been refused"),
    (error: unknown) => error as Error,
  );

describe("agents on two replicas (PostgreSQL and Redis)", () => {
  it("a scope set on replica A refuses the agent's next request on replica B", async () => {
    const agent = await set.newIdentity(a);
    const onB = set.clientAt(b.url, agent);
    // B has served the agent before the change, so anything it kept would be stale.
    expect((await resolve(onB)).provider).toBe("openai");
    await setAgentScope(set.clientAt(a.url), agent.handle, ["anthropic"]);
    const error = await refusal(resolve(onB));
    expect(error).toBeInstanceOf(OperationNotAllowedError);
    expect(error.message).toContain("may use only anthropic (its scope)");
  });

  it("a revocation on replica A refuses the agent's next request on replica B, between two requests", async () => {
    const agent = await set.newIdentity(a);
    const onA = set.clientAt(a.url, agent);
    const onB = set.clientAt(b.url, agent);
    expect((await resolve(onB)).provider).toBe("openai");
    expect((await resolve(onA)).provider).toBe("openai");
    await revokeAgent(set.clientAt(a.url), agent.handle);
    for (const client of [onB, onA]) {
      const error = await refusal(resolve(client));
      expect(error).toBeInstanceOf(AuthenticationFailedError);
      expect(error.message).toContain(`"${agent.handle}" was revoked`);
    }
  });
});
