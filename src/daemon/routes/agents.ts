import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  AgentActivitySchema,
  AgentListQuerySchema,
  AgentListSchema,
  AgentParamsSchema,
  type AgentRecord,
  AgentSchema,
  AgentScopeUpdateSchema,
  describeScope,
} from "../../api/agents.ts";
import { errorResponses } from "../../api/errors.ts";
import { identityActivity, lastSeen } from "../../audit/agent-activity.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { NotFoundError, OperationNotAllowedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { assertMayManage } from "../services/agent-scopes.ts";
import { type CallerScope, callerScope } from "../services/caller-scope.ts";
import type { RegisteredIdentity } from "../services/identity-registry.ts";

const errors = errorResponses(400, 401, 403, 404);
const tags = ["agents"];
const security = [{ pop: [] }];

function agentRecord(identity: RegisteredIdentity, seen: string | null, caller: CallerScope): AgentRecord {
  return {
    handle: identity.handle,
    did: identity.did,
    principal_id: identity.principalId,
    created_at: identity.createdAt,
    claimed_at: identity.claimedAt,
    last_seen: seen,
    scope: identity.scope === null ? null : [...identity.scope],
    revoked_at: identity.revokedAt,
    revoked_by: identity.revokedBy,
    is_caller: isCaller(caller, identity.handle),
  };
}

/** Agents (identities) as principals of least privilege: their scope, revocation and activity. */
export function agentRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  /** An identity the caller may look at: itself, its principal's, or (admins) anyone's. */
  async function visibleIdentity(scope: CallerScope, handle: string): Promise<RegisteredIdentity> {
    const identity = await context.identities.find(handle);
    const self = isCaller(scope, handle);
    const own = identity?.principalId === scope.principal.id;
    if (identity && own && !self && scope.guard.restricted) {
      throw new OperationNotAllowedError(
        `the agent "${scope.caller.handle}" has a scope (${describeScope(scope.guard.scope)}), so it cannot manage agents or see other agents; use an unrestricted identity or the dashboard`,
      );
    }
    const visible =
      identity && (self || (!scope.guard.restricted && (own || scope.principal.role === "admin")));
    if (!visible) throw new NotFoundError(`no agent "${handle}" in your account; see \`svc agent list\``);
    return identity;
  }

  return async (app) => {
    app.get(
      "/api/agents",
      {
        config: { browser: true },
        schema: {
          summary: "The identities (agents) of the caller's principal, with scope and last use",
          description:
            "An identity with a scope sees only itself. An admin with `all=true` sees every principal's identities.",
          tags,
          security,
          querystring: AgentListQuerySchema,
          response: { 200: AgentListSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        let identities: RegisteredIdentity[];
        if (scope.guard.restricted) {
          identities = [(await context.identities.find(scope.caller.handle))!];
        } else {
          const everyone = request.query.all === "true" && scope.principal.role === "admin";
          identities = await context.identities.list(everyone ? null : scope.principal.id);
        }
        const seen = await lastSeen(
          context.store.db,
          identities.map((identity) => identity.handle),
        );
        return {
          agents: identities.map((identity) =>
            agentRecord(identity, seen.get(identity.handle) ?? null, scope),
          ),
        };
      },
    );

    app.get(
      "/api/agents/:handle",
      {
        config: { browser: true },
        schema: {
          summary: "One identity: scope, revocation, last use",
          tags,
          security,
          params: AgentParamsSchema,
          response: { 200: AgentSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const identity = await visibleIdentity(scope, request.params.handle);
        const seen = await lastSeen(context.store.db, [identity.handle]);
        return agentRecord(identity, seen.get(identity.handle) ?? null, scope);
      },
    );

    app.get(
      "/api/agents/:handle/activity",
      {
        config: { browser: true },
        schema: {
          summary: "Requests the identity made through the proxy, per provider and outcome (24 h, 7 days)",
          tags,
          security,
          params: AgentParamsSchema,
          response: { 200: AgentActivitySchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const identity = await visibleIdentity(scope, request.params.handle);
        return {
          handle: identity.handle,
          ...(await identityActivity(context.store.db, identity.handle, context.now())),
        };
      },
    );

    app.put(
      "/api/agents/:handle/scope",
      {
        config: { browser: true },
        schema: {
          summary: "Replace an identity's scope (null: unrestricted)",
          description:
            "By its principal (through another, unrestricted identity, or the dashboard) or an admin. No identity changes its own scope, and an identity with a scope changes none. Takes effect on the identity's next request.",
          tags,
          security,
          params: AgentParamsSchema,
          body: AgentScopeUpdateSchema,
          response: { 200: AgentSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const target = await visibleIdentity(scope, request.params.handle);
        assertMayManage(manager(scope, target.handle), target, "scope");
        assertNotRevoked(target);
        // A misspelt provider would allow nothing without saying so: it must exist.
        for (const entry of request.body.scope ?? []) context.providers.get(entry.split(":")[0]!);
        const before = describeScope(target.scope);
        const updated = await context.identities.setScope(target.handle, request.body.scope);
        await scope.audit({
          event: AUDIT_EVENTS.agentScopeChanged,
          status: "success",
          detail: { agent: target.handle, before, after: describeScope(updated.scope) },
        });
        const seen = await lastSeen(context.store.db, [updated.handle]);
        return agentRecord(updated, seen.get(updated.handle) ?? null, scope);
      },
    );

    app.post(
      "/api/agents/:handle/revoke",
      {
        config: { browser: true },
        schema: {
          summary: "Revoke an identity for good: its next request is refused, its claim links die",
          description:
            "By its principal or an admin (an identity may also revoke itself). A revoked key cannot be registered again, under any handle.",
          tags,
          security,
          params: AgentParamsSchema,
          body: z.unknown().optional(),
          response: { 200: AgentSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const target = await visibleIdentity(scope, request.params.handle);
        if (!isCaller(scope, target.handle)) {
          assertMayManage(manager(scope, target.handle), target, "revoke");
        }
        assertNotRevoked(target);
        const revoked = await context.identities.revoke(target.handle, scope.caller.handle, context.now());
        await scope.audit({
          event: AUDIT_EVENTS.agentRevoked,
          status: "success",
          detail: { agent: target.handle, agent_principal_id: target.principalId },
        });
        const seen = await lastSeen(context.store.db, [revoked.handle]);
        return agentRecord(revoked, seen.get(revoked.handle) ?? null, scope);
      },
    );
  };
}

function manager(scope: CallerScope, target: string) {
  const { caller, principal, guard } = scope;
  return { handle: caller.handle, principal, guard, isTarget: isCaller(scope, target) };
}

/** A PoP caller is an identity; a dashboard session (no DID) is the principal itself. */
function isCaller(scope: CallerScope, handle: string): boolean {
  return scope.caller.did !== "" && scope.caller.handle === handle;
}

function assertNotRevoked(identity: RegisteredIdentity): void {
  if (identity.revokedAt) {
    throw new OperationNotAllowedError(
      `the identity "${identity.handle}" was already revoked at ${identity.revokedAt}`,
    );
  }
}
