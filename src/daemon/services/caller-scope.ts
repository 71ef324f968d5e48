import type { FastifyRequest } from "fastify";
import type { AuditEventInput } from "../../audit/events.ts";
import { OperationNotAllowedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { type Caller, callerOf } from "../plugins/pop-auth.ts";
import { ScopeGuard, scopeRefusalEvent, unrestrictedGuard } from "./agent-scopes.ts";
import type { Principal } from "./principals.ts";

/** What a PoP-authenticated request acts as: its identity, principal and vault, and how to audit. */
export interface CallerScope {
  caller: Caller;
  principal: Principal;
  vaultId: string;
  /** What of the principal's connections this identity may use (its scope). */
  guard: ScopeGuard;
  /** Records an audit event with this caller's identity and principal filled in. */
  audit(
    event: Omit<AuditEventInput, "identity" | "principal_id">,
    secrets?: readonly string[],
  ): Promise<void>;
}

/** The caller's scope; an identity no principal has claimed has no vault to act on. */
export function callerScope(context: DaemonContext, request: FastifyRequest): Promise<CallerScope> {
  return scopeOf(context, callerOf(request), { browserSession: Boolean(request.browserSession) });
}

/**
 * The scope of a verified caller: a PoP route's, a credential channel's, or (`browserSession`) a
 * dashboard session's, which is the principal itself and so unrestricted.
 */
export async function scopeOf(
  context: DaemonContext,
  caller: Caller,
  options: { browserSession?: boolean } = {},
): Promise<CallerScope> {
  const principal = caller.principalId ? await context.principals.get(caller.principalId) : undefined;
  if (!principal?.vaultId) {
    throw new OperationNotAllowedError(
      `the identity "${caller.handle}" is registered but not claimed by an account, so it has no vault; on the daemon's machine any svc command claims it, elsewhere run \`svc onboard\``,
    );
  }
  const audit: CallerScope["audit"] = async (event, secrets) => {
    await context.audit.record(
      { ...event, identity: caller.handle, principal_id: principal.id },
      secrets ? { secrets } : undefined,
    );
  };
  // A dashboard session is the principal itself; a PoP caller is one of its identities.
  const identity = options.browserSession ? undefined : await context.identities.find(caller.handle);
  const guard = identity
    ? new ScopeGuard(caller.handle, identity.scope, (provider, connection, scope) =>
        audit(scopeRefusalEvent(provider, connection, scope)),
      )
    : unrestrictedGuard(caller.handle);
  return { caller, principal, vaultId: principal.vaultId, guard, audit };
}

/** Registering and removing providers changes them for every principal: admins only. */
export function requireAdmin(scope: CallerScope, action: string): void {
  if (scope.principal.role !== "admin") {
    throw new OperationNotAllowedError(
      `only an admin can ${action}; your principal's role is ${scope.principal.role}`,
    );
  }
}
