import { expect } from "vitest";
import type { CliResult } from "./cli.ts";

/** Assertions that none of the planted `secrets` reaches an output, and that a CLI run succeeded. */
export function canaryChecks(secrets: readonly string[]) {
  const expectNoSecret = (text: string): void => {
    for (const secret of secrets) expect(text).not.toContain(secret);
  };
  const expectOk = (result: CliResult): CliResult => {
    if (result.code !== 0) throw new Error(`svc exited ${result.code}: ${result.stderr}${result.stdout}`);
    expectNoSecret(result.stdout + result.stderr);
    return result;
  };
  return { expectNoSecret, expectOk };
}
