import { loadBundledProviders } from "../../providers/catalogue.ts";

/**
 * The `providers` readiness check: every bundled definition parses against the schema. Bundled
 * files do not change while the daemon runs, so they are parsed once, at start.
 */
export function providerChecks() {
  let result: { ok: boolean; issue?: string };
  try {
    loadBundledProviders();
    result = { ok: true };
  } catch (error) {
    result = { ok: false, issue: error instanceof Error ? error.message : String(error) };
  }
  return {
    check: () => result,
    warnings: (): string[] => [],
  };
}
