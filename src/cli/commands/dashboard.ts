import type { Command } from "commander";
import { hasDisplay, openBrowser } from "../browser.ts";
import type { CliContext } from "../context.ts";

export interface DashboardOptions {
  print?: boolean;
  audit?: boolean;
}

interface DashboardLink {
  url: string;
  expires_at: string;
}

/**
 * `svc dashboard`: asks the daemon for a one-time sign-in link (`POST /api/session`) and opens
 * it. The link works once, so whoever receives it is the one to use it: `--print` and `--json`
 * hand it over (stdout) and open nothing; otherwise it is opened where a browser can run and
 * printed on stderr, which is all that happens with SVC_NO_BROWSER=1 or without a display.
 */
export async function runDashboard(context: CliContext, options: DashboardOptions): Promise<void> {
  const client = await context.daemon();
  const link = await client.post<DashboardLink>("/api/session", options.audit ? { next: "/audit" } : {});
  const { out } = context;
  if (out.options.json) {
    out.json({ url: link.url, expires_at: link.expires_at });
    return;
  }
  if (options.print) {
    out.line(link.url);
    return;
  }
  const page = options.audit ? "the audit log" : "the dashboard";
  out.notice(
    `Open this link in a browser to sign in to ${page} (it works once, for a minute):\n  ${link.url}`,
  );
  if (hasDisplay(context.io.env) && openBrowser(link.url, context.io.env))
    out.status("Opening your browser…");
}

export function registerDashboardCommand(
  program: Command,
  contextFor: (command: Command) => CliContext,
): void {
  program
    .command("dashboard")
    .description("Open the dashboard in the browser, signed in through a one-time link")
    .option("--print", "print the link on stdout instead of opening it")
    .option("--audit", "go to the audit log page (/audit)")
    .action(async (options: DashboardOptions, command: Command) =>
      runDashboard(contextFor(command), options),
    );
}
