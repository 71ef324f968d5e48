/** The daemon's agent routes, typed: scopes, revocation and activity of identities. */
import type { AgentActivity, AgentRecord, AgentScope } from "../api/agents.ts";
import { segment } from "./daemon-api.ts";
import type { DaemonClient } from "./daemon-client.ts";

export function listAgents(client: DaemonClient, options: { all?: boolean } = {}): Promise<AgentRecord[]> {
  return client
    .get<{ agents: AgentRecord[] }>(`/api/agents${options.all ? "?all=true" : ""}`)
    .then((list) => list.agents);
}

export function getAgent(client: DaemonClient, handle: string): Promise<AgentRecord> {
  return client.get<AgentRecord>(`/api/agents/${segment(handle)}`);
}

export function setAgentScope(client: DaemonClient, handle: string, scope: AgentScope): Promise<AgentRecord> {
  return client.request<AgentRecord>("PUT", `/api/agents/${segment(handle)}/scope`, { body: { scope } });
}

export function revokeAgent(client: DaemonClient, handle: string): Promise<AgentRecord> {
  return client.post<AgentRecord>(`/api/agents/${segment(handle)}/revoke`);
}

export function agentActivity(client: DaemonClient, handle: string): Promise<AgentActivity> {
  return client.get<AgentActivity>(`/api/agents/${segment(handle)}/activity`);
}
