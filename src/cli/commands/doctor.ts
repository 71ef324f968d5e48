import type { Command } from "commander";
import type { Health, Readiness } from "../../api/health.ts";
import { VERSION } from "../../core/version.ts";
import type { CliContext } from "../context.ts";

/** The spec's six doctor checks, in order. */
export const DOCTOR_CHECKS = [
  "spec_version",
  "identity",
  "providers",
  "connections",
  "vault",
  "integrity",
] as const;

export interface DoctorReport {
  ok: boolean;
  checks: Record<(typeof DOCTOR_CHECKS)[number], { status: string; ok: boolean }>;
  issues: string[];
  warnings: string[];
}

function sameMajor(a: string, b: string): boolean {
  return a.split(".")[0] === b.split(".")[0];
}

export async function runDoctor(context: CliContext): Promise<number> {
  const client = await context.daemon();
  const [ready, health] = await Promise.all([
    client.get<Readiness>("/api/ready"),
    client.get<Health>("/api/health", { auth: "none" }),
  ]);
  const issues = [...(ready.issues ?? [])];
  if (!sameMajor(health.version, VERSION)) {
    issues.push(`spec_version: the daemon runs svc ${health.version}, this CLI is ${VERSION}`);
  }
  const checks = Object.fromEntries(
    DOCTOR_CHECKS.map((name) => {
      let status = ready.checks[name];
      if (name === "spec_version" && !sameMajor(health.version, VERSION)) status = "incompatible";
      return [name, { status, ok: status === "ok" }];
    }),
  ) as DoctorReport["checks"];
  // Loaded here only: reading certificates pulls in node:crypto's X509 support, which no other command needs.
  const { installedCaWarning } = await import("../../proxy/ca-expiry.ts");
  const report: DoctorReport = {
    ok: Object.values(checks).every((check) => check.ok) && issues.length === 0,
    checks,
    issues,
    warnings: [
      ...(ready.warnings ?? []),
      ...[installedCaWarning(context.layout.proxy)].filter((w) => w !== undefined),
    ],
  };
  if (context.out.options.json) {
    context.out.json(report);
  } else {
    const { green, red } = context.out.colors;
    for (const name of DOCTOR_CHECKS) {
      const check = checks[name];
      context.out.line(`${check.ok ? green("✓") : red("✗")} ${name.padEnd(13)} ${check.status}`);
    }
    for (const issue of issues) context.out.line(`${red("issue:")} ${issue}`);
    for (const warning of report.warnings) context.out.warn(warning);
  }
  return report.ok ? 0 : 1;
}

export function registerDoctorCommand(
  program: Command,
  contextFor: (command: Command) => CliContext,
  setExit: (code: number) => void,
): void {
  program
    .command("doctor")
    .description("Check spec version, identity, providers, connections, vault and integrity")
    .action(async (_options, command: Command) => {
      const code = await runDoctor(contextFor(command));
      if (code !== 0) setExit(code);
    });
}
