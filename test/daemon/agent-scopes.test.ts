import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentActivity, AgentRecord } from "../../src/api/agents.ts";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import type { Connection } from "../../src/api/connections.ts";
import type { ProxyRoute, ResolvedCredential, SignedRequest } from "../../src/api/credentials.ts";
import {
  agentActivity,
  getAgent,
  listAgents,
  revokeAgent,
  setAgentScope,
} from "../../src/client/agents-api.ts";
import { listConnections } from "../../src/client/daemon-api.ts";
import type { DaemonClient } from "../../src/client/daemon-client.ts";
import {
  AuthenticationFailedError,
  NotFoundError,
  OperationNotAllowedError,
  ProviderNotFoundError,
} from "../../src/core/errors.ts";
import {
  loginWithApiKey,
  recordProxyTraffic,
  signedFetch,
  startTestDaemon,
  type TestDaemon,
} from "../support/daemon.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

async function refusal(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => expect.unreachable("the request should have been refused"),
    (error: unknown) => error as Error,
  );
}

describe("agent scopes", () => {
  let t: TestDaemon;
  let agent: DaemonClient;
  let agentHandle: string;
  const keys = {
    openai: `sk-proj-${hex(16)}`,
    openaiWork: `sk-work-${hex(16)}`,
    anthropic: `sk-ant-api03-${hex(16)}`,
    github: `ghp_${hex(18)}`,
  };
  const resolve = (client: DaemonClient, body: object) =>
    client.post<ResolvedCredential>("/api/credentials/resolve", body);
  const audit = (query: string) => t.client.get<AuditPageRecord>(`/api/audit/events?${query}`);

  beforeAll(async () => {
    t = await startTestDaemon();
    await loginWithApiKey(t.client, "openai", keys.openai);
    await loginWithApiKey(t.client, "openai", keys.openaiWork, { connection: "work" });
    await loginWithApiKey(t.client, "anthropic", keys.anthropic);
    await loginWithApiKey(t.client, "github-token", keys.github);
    await loginWithApiKey(
      t.client,
      "aws",
      JSON.stringify({
        access_key_id: `AKIA${hex(8).toUpperCase()}`,
        secret_access_key: hex(20),
        region: "eu-west-1",
      }),
    );
    const created = await t.newIdentity();
    agent = created.client;
    agentHandle = created.identity.handle;
    await setAgentScope(t.client, agentHandle, ["anthropic", "openai:work"]);
  });
  afterAll(async () => {
    await t.stop();
  });

  it("leaves an unrestricted identity as it was: every connection resolves", async () => {
    const other = await t.newIdentity();
    expect((await getAgent(other.client, other.identity.handle)).scope).toBeNull();
    const providers = [];
    for (const host of ["api.openai.com", "api.anthropic.com", "api.github.com"]) {
      providers.push((await resolve(other.client, { host, path: "/" })).provider);
    }
    expect(providers).toEqual(["openai", "anthropic", "github-token"]);
    expect((await resolve(other.client, { host: "api.openai.com" })).connection).toBe("default");
  });

  it("resolves what the scope allows, choosing the allowed connection over the default", async () => {
    const anthropic = await resolve(agent, { host: "api.anthropic.com", path: "/v1/messages" });
    expect(anthropic.header_value).toBe(keys.anthropic);
    const openai = await resolve(agent, { host: "api.openai.com", path: "/v1/models" });
    expect(openai).toMatchObject({ connection: "work", header_value: `Bearer ${keys.openaiWork}` });
  });

  it("refuses a provider and a connection outside the scope, naming the scope, and audits it", async () => {
    const github = await refusal(resolve(agent, { host: "api.github.com", path: "/user" }));
    expect(github).toBeInstanceOf(OperationNotAllowedError);
    expect(github.message).toContain(
      `"${agentHandle}" may use only anthropic, openai:work (its scope), not github-token`,
    );
    expect(github.message).not.toContain(keys.github);
    const named = await refusal(resolve(agent, { provider: "openai", connection: "default" }));
    expect(named).toBeInstanceOf(OperationNotAllowedError);
    expect(named.message).toContain("not openai:default");
    const raw = await signedFetch(t.daemon.url, { ...agentIdentity() }, "POST", "/api/credentials/resolve", {
      host: "api.github.com",
      path: "/",
    });
    expect(raw.status).toBe(403);
    expect(raw.body).toMatchObject({ error: "OperationNotAllowedError" });
    const denied = await audit(`event=agent.scope_denied&identity=${agentHandle}`);
    expect(denied.events.map((event) => [event.provider, event.connection, event.status])).toEqual(
      expect.arrayContaining([
        ["github-token", null, "denied"],
        ["openai", "default", "denied"],
      ]),
    );
    expect(denied.events[0]?.detail).toMatchObject({ scope: "anthropic, openai:work" });
  });

  it("refuses to sign an AWS request outside the scope", async () => {
    const body = "{}";
    const error = await refusal(
      agent.post<SignedRequest>("/api/credentials/sign", {
        host: "bedrock-runtime.us-east-1.amazonaws.com",
        method: "POST",
        path: "/model/x/invoke",
        provider: "aws",
        payload_sha256: createHash("sha256").update(body).digest("hex"),
      }),
    );
    expect(error).toBeInstanceOf(OperationNotAllowedError);
    expect(error.message).toContain("not aws");
  });

  it("shows a scoped identity only its allowed connections: list, provider states, proxy routes", async () => {
    const mine = await listConnections(agent);
    expect(mine.map((c) => `${c.provider}:${c.connection}`).sort()).toEqual([
      "anthropic:default",
      "openai:work",
    ]);
    const all = await listConnections(t.client);
    expect(all.length).toBe(5);
    const { routes } = await agent.get<{ routes: ProxyRoute[] }>("/api/proxy/routes");
    const route = (name: string) => routes.find((entry) => entry.provider === name)!;
    expect(route("openai")).toMatchObject({ connections: ["work"], default_connection: "work" });
    expect(route("github-token")).toMatchObject({
      connections: [],
      default_connection: null,
      allowed: false,
    });
    expect(route("anthropic").allowed).toBeUndefined();
    const single = await refusal(agent.get<Connection>("/api/connections/github-token/default"));
    expect(single).toBeInstanceOf(OperationNotAllowedError);
  });

  it("never reveals a secret to a scoped identity, even one it may use", async () => {
    const error = await refusal(agent.get<Connection>("/api/connections/anthropic/default?reveal=true"));
    expect(error).toBeInstanceOf(OperationNotAllowedError);
    expect(error.message).toContain("cannot reveal");
    const redacted = await agent.get<Connection>("/api/connections/anthropic/default");
    expect(JSON.stringify(redacted)).not.toContain(keys.anthropic);
  });

  it("lets a scoped identity log in only to connections in its scope", async () => {
    const outside = await refusal(loginWithApiKey(agent, "github-token", `ghp_${hex(18)}`, { force: true }));
    expect(outside).toBeInstanceOf(OperationNotAllowedError);
    const other = await refusal(loginWithApiKey(agent, "openai", `sk-x-${hex(16)}`, { force: true }));
    expect(other.message).toContain("not openai:default");
    expect((await resolve(t.client, { provider: "openai" })).header_value).toBe(`Bearer ${keys.openai}`);
    const work = `sk-work2-${hex(16)}`;
    await loginWithApiKey(agent, "openai", work, { connection: "work", force: true });
    expect((await resolve(agent, { provider: "openai" })).header_value).toBe(`Bearer ${work}`);
  });

  it("lets no identity change its own scope, and no scoped identity manage agents", async () => {
    const own = await refusal(setAgentScope(agent, agentHandle, null));
    expect(own).toBeInstanceOf(OperationNotAllowedError);
    const self = await refusal(setAgentScope(t.client, t.identity.handle, ["openai"]));
    expect(self.message).toContain("cannot change its own scope");
    const other = await refusal(setAgentScope(agent, t.identity.handle, ["openai"]));
    expect(other.message).toContain("cannot manage agents");
    expect((await getAgent(t.client, agentHandle)).scope).toEqual(["anthropic", "openai:work"]);
    // A scoped identity lists only itself.
    expect((await listAgents(agent)).map((entry) => entry.handle)).toEqual([agentHandle]);
  });

  it("keeps a scoped identity out of what only the principal may do: dashboard links, the provider registry, others' events", async () => {
    const link = await refusal(agent.post("/api/session", {}));
    expect(link).toBeInstanceOf(OperationNotAllowedError);
    expect(link.message).toContain("cannot open the dashboard");
    // The agent's principal is the admin here: the role alone would let it register providers.
    const register = await refusal(
      agent.post("/api/providers", {
        name: "evil-openai",
        display_name: "x",
        description: "x",
        auth_type: "api_key",
        flow: "api_key",
        api_url: "api.openai.com",
        env: [],
        docs_url: "https://example.com",
      }),
    );
    expect(register.message).toContain("cannot register providers");
    const remove = await refusal(agent.request("DELETE", "/api/providers/openai"));
    expect(remove.message).toContain("cannot remove providers");
    const events = await agent.get<AuditPageRecord>(
      `/api/audit/events?identity=${t.identity.handle}&limit=500`,
    );
    expect(events.events.length).toBeGreaterThan(0);
    expect(new Set(events.events.map((event) => event.identity))).toEqual(new Set([agentHandle]));
  });

  it("lets another account's user neither see nor change the agent; an admin can", async () => {
    const user = await t.newUser();
    const hidden = await refusal(setAgentScope(user.client, agentHandle, null));
    expect(hidden).toBeInstanceOf(NotFoundError);
    expect((await listAgents(user.client)).map((entry) => entry.handle)).toEqual([user.identity.handle]);
    const everyone = await listAgents(t.client, { all: true });
    expect(everyone.map((entry) => entry.handle)).toEqual(
      expect.arrayContaining([agentHandle, user.identity.handle]),
    );
    const admin = await setAgentScope(t.client, user.identity.handle, ["openai"]);
    expect(admin.scope).toEqual(["openai"]);
    const changed = await audit(`event=agent.scope_changed`);
    expect(changed.events[0]).toMatchObject({
      identity: t.identity.handle,
      detail: { agent: user.identity.handle, before: "unrestricted", after: "openai" },
    });
  });

  it("refuses a scope naming a provider svc does not know, keeping the old one", async () => {
    const error = await refusal(setAgentScope(t.client, agentHandle, ["anthropic", "opnai"]));
    expect(error).toBeInstanceOf(ProviderNotFoundError);
    expect(error.message).toContain("openai");
    expect((await getAgent(t.client, agentHandle)).scope).toEqual(["anthropic", "openai:work"]);
  });

  it("widens and narrows on the next request", async () => {
    const probe = await t.newIdentity();
    await setAgentScope(t.client, probe.identity.handle, ["anthropic"]);
    await refusal(resolve(probe.client, { host: "api.github.com" }));
    await setAgentScope(t.client, probe.identity.handle, ["anthropic", "github-token"]);
    expect((await resolve(probe.client, { host: "api.github.com" })).provider).toBe("github-token");
    await setAgentScope(t.client, probe.identity.handle, []);
    const nothing = await refusal(resolve(probe.client, { host: "api.anthropic.com" }));
    expect(nothing.message).toContain("may use only nothing");
  });

  it("reports activity per provider and outcome from the proxy's events", async () => {
    const now = Date.now();
    await recordProxyTraffic(t, agent, [
      {
        timestamp: new Date(now - 1000).toISOString(),
        event: "proxy.request",
        status: "success",
        provider: "anthropic",
      },
      {
        timestamp: new Date(now - 2000).toISOString(),
        event: "proxy.request",
        status: "success",
        provider: "anthropic",
      },
      {
        timestamp: new Date(now - 3000).toISOString(),
        event: "proxy.request",
        status: "failure",
        provider: "github-token",
      },
      {
        timestamp: new Date(now - 3 * 86_400_000).toISOString(),
        event: "proxy.request",
        status: "success",
        provider: "openai",
      },
    ]);
    const activity: AgentActivity = await agentActivity(t.client, agentHandle);
    expect(activity.last_24h).toEqual([
      { provider: "anthropic", status: "success", count: 2 },
      { provider: "github-token", status: "failure", count: 1 },
    ]);
    expect(activity.last_7d).toContainEqual({ provider: "openai", status: "success", count: 1 });
    expect(Date.parse(activity.last_seen!)).toBeGreaterThan(now - 60_000);
    const record: AgentRecord = await getAgent(t.client, agentHandle);
    expect(record.last_seen).toBe(activity.last_seen);
  });

  function agentIdentity() {
    return agent.identity as Parameters<typeof signedFetch>[1];
  }
});

describe("agent revocation", () => {
  let t: TestDaemon;

  beforeAll(async () => {
    t = await startTestDaemon();
    await loginWithApiKey(t.client, "openai", `sk-proj-${hex(16)}`);
  });
  afterAll(async () => {
    await t.stop();
  });

  it("refuses the identity's next request, records who revoked it, and never registers its key again", async () => {
    const victim = await t.newIdentity();
    expect((await resolve(victim.client)).provider).toBe("openai");
    const revoked = await revokeAgent(t.client, victim.identity.handle);
    expect(revoked).toMatchObject({ revoked_by: t.identity.handle });
    const next = await refusal(resolve(victim.client));
    expect(next).toBeInstanceOf(AuthenticationFailedError);
    expect(next.message).toContain(`"${victim.identity.handle}" was revoked`);
    const again = await signedFetch(t.daemon.url, victim.identity, "POST", "/api/identities", {
      handle: victim.identity.handle,
      did: victim.identity.did,
    });
    expect(again.status).toBe(401);
    const renamed = await signedFetch(
      t.daemon.url,
      { ...victim.identity, handle: `${victim.identity.handle}-2` },
      "POST",
      "/api/identities",
      { handle: `${victim.identity.handle}-2`, did: victim.identity.did },
    );
    expect(renamed.status).toBe(403);
    const events = await t.client.get<AuditPageRecord>("/api/audit/events?event=agent.revoked");
    expect(events.events[0]).toMatchObject({
      identity: t.identity.handle,
      detail: { agent: victim.identity.handle },
    });
  });

  it("kills the pending claim link of a revoked, unclaimed identity", async () => {
    const pending = await t.newIdentity({ claim: false });
    const registered = await pending.client.post<{ claim_url: string }>("/api/identities", {
      handle: pending.identity.handle,
      did: pending.identity.did,
    });
    const before = await fetch(registered.claim_url);
    expect(before.status).toBe(200);
    await revokeAgent(t.client, pending.identity.handle);
    const after = await fetch(registered.claim_url);
    expect(after.status).toBe(400);
    expect(await after.text()).toContain("expired");
    const owner = (await t.client.get<{ principal_id: string }>("/api/whoami")).principal_id;
    const claimed = await t.daemon.context.identities
      .claim(pending.identity.handle, owner, new Date())
      .catch((error: Error) => error);
    expect(claimed).toBeInstanceOf(OperationNotAllowedError);
  });

  it("refuses a user revoking another account's identity", async () => {
    const user = await t.newUser();
    const error = await refusal(revokeAgent(user.client, t.identity.handle));
    expect(error).toBeInstanceOf(NotFoundError);
    expect((await getAgent(t.client, t.identity.handle)).revoked_at).toBeNull();
  });

  function resolve(client: DaemonClient) {
    return client.post<ResolvedCredential>("/api/credentials/resolve", { host: "api.openai.com" });
  }
});
