import type { Readiness } from "../../api/health.ts";
import { SPEC_VERSION } from "../../core/version.ts";
import { SettingsRepository } from "../../store/settings.ts";
import { masterKeyWarnings } from "../../vault/master-key.ts";
import type { DaemonContext } from "../context.ts";
import type { Caller } from "../plugins/pop-auth.ts";

export const SPEC_VERSION_SETTING = "spec_version";
export const SYSTEM_VAULT_ID = "system";

export type CheckResult = { value: string; issue?: string; warning?: string };

/** How long a probe result is shared (docs/daemon-api.md, "GET /api/ready"). */
export const PROBE_TTL_MS = {
  vault: 1_000,
  connections: 1_000,
  integrity: 10_000,
  specVersion: 1_000,
} as const;

function failure(error: unknown, value = "failed"): CheckResult {
  return { value, issue: error instanceof Error ? error.message : String(error) };
}

async function attempt(run: () => Promise<CheckResult | undefined>): Promise<CheckResult> {
  try {
    return (await run()) ?? { value: "ok" };
  } catch (error) {
    return failure(error);
  }
}

/** Derived on every call, never stored (spec: states and transitions). */
export async function evaluateReadiness(context: DaemonContext, caller: Caller): Promise<Readiness> {
  const principal = caller.principalId ? await context.principals.get(caller.principalId) : undefined;
  const vaultId = principal?.vaultId ?? SYSTEM_VAULT_ID;

  const store = await attempt(async () => {
    await context.store.probe();
    return undefined;
  });
  const vault = await context.probes.run(`vault:${vaultId}`, PROBE_TTL_MS.vault, () =>
    attempt(async () => {
      await context.vault.roundTrip(vaultId);
      return undefined;
    }),
  );
  const integrity = await context.probes.run("integrity", PROBE_TTL_MS.integrity, () =>
    attempt(async () => {
      const result = await context.vault.checkIntegrity();
      return result.ok ? undefined : { value: "failed", issue: result.issue };
    }),
  );
  const identity: CheckResult = caller.principalId
    ? { value: "ok" }
    : {
        value: "ok",
        warning: `the identity "${caller.handle}" is registered but not yet claimed by a principal`,
      };
  const providers = await attempt(async () => {
    const result = context.providers.check();
    return result.ok ? undefined : { value: "failed", issue: result.issue };
  });
  const connections = await attempt(async () => {
    for (const key of await context.vault.list(vaultId, "connections/"))
      await context.vault.get(vaultId, key);
    return undefined;
  });
  const specVersion = await context.probes.run("spec_version", PROBE_TTL_MS.specVersion, () =>
    attempt(async () => {
      const stored = await new SettingsRepository(context.store.db).get(SPEC_VERSION_SETTING);
      if (stored === String(SPEC_VERSION)) return undefined;
      return {
        value: "mismatch",
        issue: `the store was written by spec version ${stored ?? "unknown"} but this daemon speaks ${SPEC_VERSION}; upgrade svc`,
      };
    }),
  );

  // Only a configured Redis is a check: the embedded memory state cannot fail on its own.
  const redis =
    context.runtimeState.kind === "redis"
      ? await attempt(async () => {
          await context.runtimeState.ping();
          return undefined;
        })
      : undefined;

  const results = {
    store,
    vault,
    integrity,
    identity,
    providers,
    connections,
    spec_version: specVersion,
    ...(redis ? { redis } : {}),
  };
  const issues = [...context.masterKey.issues];
  const warnings = [...masterKeyWarnings(context.masterKey), ...context.providers.warnings()];
  for (const [name, result] of Object.entries(results)) {
    if (result.issue) issues.push(`${name}: ${result.issue}`);
    if (result.warning) warnings.push(result.warning);
  }
  return {
    status: issues.length === 0 ? "ready" : "not_ready",
    checks: {
      store: store.value,
      vault: vault.value,
      integrity: integrity.value,
      identity: identity.value,
      providers: providers.value,
      connections: connections.value,
      spec_version: specVersion.value,
      ...(redis ? { redis: redis.value } : {}),
    },
    warnings,
    issues,
    store_backend: context.store.description,
    runtime_state: context.runtimeState.description,
    ...encryptionFields(context),
  };
}

export function encryptionFields(context: DaemonContext) {
  return {
    configured_encryption_mode: context.masterKey.configuredMode,
    effective_encryption_source: context.masterKey.effectiveSource,
    encryption_backend: context.masterKey.backend,
  };
}
