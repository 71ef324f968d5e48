import type { FastifyRequest } from "fastify";
import type { AuditEventInput } from "../../audit/events.ts";
import { OperationNotAllowedError } from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { type Caller, callerOf } from "../plugins/pop-auth.ts";
import type { Principal } from "./principals.ts";

/** What a PoP-authenticated request acts as: its identity, principal and vault, and how to audit. */
export interface CallerScope {
  caller: Caller;
  principal: Principal;
  vaultId: string;
  /** Records an audit event with this caller's identity and principal filled in. */
  audit(
    event: Omit<AuditEventInput, "identity" | "principal_id">,
    secrets?: readonly string[],
  ): Promise<void>;
}

/** The caller's scope; an identity no principal has claimed has no vault to act on. */
export function callerScope(context: DaemonContext, request: FastifyRequest): Promise<CallerScope> {
  return scopeOf(context, callerOf(request));
}

/** The scope of a verified caller (a PoP route's, or a credential channel's). */
export async function scopeOf(context: DaemonContext, caller: Caller): Promise<CallerScope> {
  const principal = caller.principalId ? await context.principals.get(caller.principalId) : undefined;
  if (!principal?.vaultId) {
    throw new OperationNotAllowedError(
      `the identity "${caller.handle}" is registered but not claimed by an account, so it has no vault; on the daemon's machine any svc command claims it, elsewhere run \`svc onboard\``,
    );
  }
  return {
    caller,
    principal,
    vaultId: principal.vaultId,
    async audit(event, secrets) {
      await context.audit.record(
        { ...event, identity: caller.handle, principal_id: principal.id },
        secrets ? { secrets } : undefined,
      );
    },
  };
}

/** Registering and removing providers changes them for every principal: admins only. */
export function requireAdmin(scope: CallerScope, action: string): void {
  if (scope.principal.role !== "admin") {
    throw new OperationNotAllowedError(
      `only an admin can ${action}; your principal's role is ${scope.principal.role}`,
    );
  }
}
