/**
 * The `providers` readiness check. Until the provider registry lands it has nothing to parse;
 * it is replaced by the registry's own check.
 */
export function providerChecks() {
  return {
    check: (): { ok: boolean; issue?: string } => ({ ok: true }),
    warnings: (): string[] => [],
  };
}
