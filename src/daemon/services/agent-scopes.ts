import { type AgentScope, describeScope, scopeAllows } from "../../api/agents.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { OperationNotAllowedError } from "../../core/errors.ts";
import type { ProviderConnections } from "./connections.ts";
import type { RegisteredIdentity } from "./identity-registry.ts";
import type { Principal } from "./principals.ts";

/** Records a refusal in the audit log (the caller's identity and principal filled in). */
export type ScopeRefusalAudit = (provider: string, connection: string | null, scope: string) => Promise<void>;

/**
 * What one caller may use of its principal's connections. Every route that hands out, shows or
 * changes a connection asks it; an unrestricted caller (null scope, or a dashboard session)
 * passes every check, so it behaves exactly as before scopes existed.
 */
export class ScopeGuard {
  readonly handle: string;
  readonly scope: AgentScope;
  readonly #audit: ScopeRefusalAudit;

  constructor(handle: string, scope: AgentScope, audit: ScopeRefusalAudit) {
    this.handle = handle;
    this.scope = scope;
    this.#audit = audit;
  }

  get restricted(): boolean {
    return this.scope !== null;
  }

  allows(provider: string, connection?: string): boolean {
    return scopeAllows(this.scope, provider, connection);
  }

  /** Refuses (and audits) a provider or connection outside the scope. */
  async assertAllowed(provider: string, connection?: string): Promise<void> {
    if (this.allows(provider, connection)) return;
    await this.#refuse(provider, connection);
  }

  /** Refuses (and audits) unless every connection of the provider is in the scope. */
  async assertAllowsEvery(provider: string): Promise<void> {
    if (this.scope === null || this.scope.includes(provider)) return;
    await this.#refuse(provider);
  }

  async #refuse(provider: string, connection?: string): Promise<never> {
    const target = connection === undefined ? provider : `${provider}:${connection}`;
    await this.#audit(provider, connection ?? null, describeScope(this.scope));
    throw new OperationNotAllowedError(
      `the agent "${this.handle}" may use only ${describeScope(this.scope)} (its scope), not ${target}; its principal can widen it with \`svc agent allow ${this.handle} ${target}\``,
    );
  }

  /** A restricted identity never sees a stored secret: reveal is for the person, not the agent. */
  async assertMayReveal(provider: string, connection: string): Promise<void> {
    if (!this.restricted) return;
    await this.#audit(provider, connection, describeScope(this.scope));
    throw new OperationNotAllowedError(
      `the agent "${this.handle}" has a scope (${describeScope(this.scope)}), so it cannot reveal stored secrets; reveal from an unrestricted identity or the person's own terminal`,
    );
  }

  /**
   * The connection a request uses: the one named (if allowed), else the provider's default when
   * the scope allows it, else the first allowed one. Refuses a provider with no allowed connection.
   */
  async chooseConnection(
    provider: string,
    requested: string | undefined,
    connections: ProviderConnections | undefined,
  ): Promise<string | undefined> {
    if (requested !== undefined) {
      await this.assertAllowed(provider, requested);
      return requested;
    }
    await this.assertAllowed(provider);
    const names = connections?.names ?? [];
    const preferred = connections?.defaultConnection ?? names[0];
    if (preferred === undefined || this.allows(provider, preferred)) return preferred;
    return names.find((name) => this.allows(provider, name)) ?? this.#refuse(provider, preferred);
  }

  /** The caller's view of a provider's connections: only the allowed ones, with a usable default. */
  view(provider: string, connections: ProviderConnections | undefined): ProviderConnections | undefined {
    if (!connections || !this.restricted) return connections;
    const names = connections.names.filter((name) => this.allows(provider, name));
    if (names.length === 0) return undefined;
    const preferred = connections.defaultConnection;
    return {
      ...connections,
      names,
      defaultConnection: preferred !== null && names.includes(preferred) ? preferred : names[0]!,
      regions: Object.fromEntries(
        Object.entries(connections.regions).filter(([name]) => names.includes(name)),
      ),
    };
  }
}

/**
 * What only the principal itself may do (open a dashboard session, change the provider registry):
 * a scoped identity doing it would step outside its scope.
 */
export function assertUnrestricted(guard: ScopeGuard, action: string): void {
  if (!guard.restricted) return;
  throw new OperationNotAllowedError(
    `the agent "${guard.handle}" has a scope (${describeScope(guard.scope)}), so it cannot ${action}; use an unrestricted identity`,
  );
}

/** A scope that allows everything: dashboard sessions act as the principal itself. */
export function unrestrictedGuard(handle: string): ScopeGuard {
  return new ScopeGuard(handle, null, async () => undefined);
}

/** The audit event a refusal records. */
export function scopeRefusalEvent(provider: string, connection: string | null, scope: string) {
  return {
    event: AUDIT_EVENTS.agentScopeDenied,
    status: "denied",
    provider,
    connection,
    detail: { scope },
  };
}

/**
 * Who may change an identity's scope or revoke it: its own principal or an admin, acting through
 * an unrestricted identity (or a dashboard session). Nobody changes their own identity's scope:
 * an agent holding a key must not be able to widen what that key may do.
 */
export function assertMayManage(
  caller: { handle: string; principal: Principal; guard: ScopeGuard; isTarget: boolean },
  target: RegisteredIdentity,
  action: "scope" | "revoke",
): void {
  if (caller.guard.restricted) {
    throw new OperationNotAllowedError(
      `the agent "${caller.handle}" has a scope (${describeScope(caller.guard.scope)}), so it cannot manage agents; use an unrestricted identity or the dashboard`,
    );
  }
  if (action === "scope" && caller.isTarget) {
    throw new OperationNotAllowedError(
      `an identity cannot change its own scope; change "${target.handle}" from another identity of the same account, or from the dashboard`,
    );
  }
  const own = target.principalId !== null && target.principalId === caller.principal.id;
  if (!own && caller.principal.role !== "admin") {
    throw new OperationNotAllowedError(
      `the identity "${target.handle}" belongs to another account; only it or an admin can manage it`,
    );
  }
}
