import { type Command, InvalidArgumentError } from "commander";
import type { AuthSession } from "../../api/auth-sessions.ts";
import type { ProxyRoute, ProxyRoutes } from "../../api/credentials.ts";
import { DEFAULT_CONNECTION } from "../../api/names.ts";
import { readClientConfig, updateClientConfig } from "../../client/config.ts";
import { getProvider, listProviders, segment } from "../../client/daemon-api.ts";
import type { DaemonClient } from "../../client/daemon-client.ts";
import { InvalidInputError } from "../../core/errors.ts";
import { IdentityFiles } from "../../identity/identity-files.ts";
import { type ClaimOutcome, ensureClaimed } from "../claim.ts";
import type { CliContext, GlobalOptions } from "../context.ts";
import {
  type BrokenKeyPair,
  type EnvScan,
  type FoundKey,
  findAwsKeyPair,
  findKey,
  scanEnvironment,
} from "../env-scan.ts";

export interface OnboardOptions {
  baseUrl?: string;
  scanOnly?: boolean;
}

/** How a provider's key in the environment relates to what svc holds. */
export type Drift = "env_only" | "svc_only" | "same" | "different";
/** What onboard did about it (absent with --scan-only). */
export type ImportResult = "imported" | "refused" | "unchanged" | "kept";

export interface ProviderReport {
  provider: string;
  /** The variable whose value counts, and where it was found (absent for `svc_only`). */
  variable?: string;
  source?: string;
  /** The connection compared with or imported into. */
  connection: string;
  state: Drift;
  result?: ImportResult;
  /** Why a key was refused, or what to do about a different one. Never a value. */
  message?: string;
  /** Other places the provider's variables were set, and whether each holds the winning value. */
  also_found?: Array<{ variable: string; source: string; same: boolean }>;
}

export interface OnboardReport {
  scan_only: boolean;
  daemon_url: string;
  /** With --base-url: what was saved as `daemon_base_url`. */
  saved_base_url?: string;
  identity: { handle: string; created: boolean };
  claim: ClaimOutcome;
  sources: Array<{
    name: string;
    path?: string;
    variables: number;
    problems: Array<{ line: number; reason: string }>;
    skipped?: string;
  }>;
  providers: ProviderReport[];
  /** OAuth providers whose variables are set here but that have no connection: `svc login` them. */
  needs_login: Array<{ provider: string; variables: string[] }>;
  /** Whether this run changed anything (identity, claim, saved URL, an imported key). */
  changed: boolean;
  status: "changed" | "unchanged";
}

/**
 * `svc onboard`: idempotent first-run setup. Saves `--base-url`, creates the identity when there is
 * none, registers and claims it (a claim link for a daemon elsewhere), then compares the API keys
 * found in the environment and this directory's dotenv files with svc's connections and imports
 * the missing ones through the same auth-session routes `svc login` uses. A key svc already holds
 * is compared by the daemon without being revealed; a different one is kept, never overwritten.
 * No value is ever printed or logged.
 */
export async function runOnboard(
  context: CliContext,
  options: OnboardOptions,
  cwd: string = process.cwd(),
): Promise<OnboardReport> {
  const { out } = context;
  const json = out.options.json;
  let changed = false;

  let savedBaseUrl: string | undefined;
  if (options.baseUrl) {
    savedBaseUrl = options.baseUrl;
    const previous = readClientConfig(context.layout.clientConfig).daemon_base_url;
    if (previous !== savedBaseUrl) {
      updateClientConfig(context.layout.clientConfig, { daemon_base_url: savedBaseUrl });
      changed = true;
    }
    const override = context.io.env.SVC_BASE_URL?.replace(/\/+$/, "");
    if (override && override !== savedBaseUrl) {
      out.warn(
        `saved ${savedBaseUrl} as the daemon URL, but SVC_BASE_URL (${override}) overrides it while it is set; this run uses ${override}`,
      );
    }
  }

  const files = new IdentityFiles(context.layout.identities);
  const active = readClientConfig(context.layout.clientConfig).active_identity;
  const created = !(active && files.exists(active));
  const identity = context.identity();
  if (created) changed = true;

  const claim = await ensureClaimed(context, { identity, events: json });
  if (claim.claimed !== "already") changed = true;

  const client = await context.daemon();
  const scan = scanEnvironment(cwd, context.io.env);
  const routes = await providerVariables(client);
  const providers: ProviderReport[] = [];
  const needsLogin: OnboardReport["needs_login"] = [];
  for (const route of routes) {
    if (route.auth_type === "oauth2") {
      if (route.connections.length > 0) continue;
      const variables = route.variables.filter((name) => scan.variables.has(name));
      if (variables.length > 0) needsLogin.push({ provider: route.provider, variables });
      continue;
    }
    const connection = route.default_connection;
    const pair = route.auth_type === "aws_sigv4" ? findAwsKeyPair(scan) : undefined;
    if (pair && "problem" in pair) {
      providers.push(brokenPair(route.provider, connection, pair, Boolean(options.scanOnly)));
      continue;
    }
    const found = pair ?? findKey(scan, route.variables);
    if (!found && !connection) continue;
    const report = await compare(client, route.provider, connection, found);
    if (!options.scanOnly) {
      await settle(client, report, found, route.auth_type === "aws_sigv4");
      if (report.result === "imported") changed = true;
    }
    providers.push(report);
  }

  const report: OnboardReport = {
    scan_only: Boolean(options.scanOnly),
    daemon_url: client.baseUrl,
    ...(savedBaseUrl ? { saved_base_url: savedBaseUrl } : {}),
    identity: { handle: identity.handle, created },
    claim,
    sources: scan.sources.map(({ name, path, variables, problems, skipped }) => ({
      name,
      ...(path ? { path } : {}),
      variables,
      problems,
      ...(skipped ? { skipped } : {}),
    })),
    providers,
    needs_login: needsLogin,
    changed,
    status: changed ? "changed" : "unchanged",
  };
  if (json) out.line(JSON.stringify(report));
  else printReport(context, report, scan);
  return report;
}

interface ProviderVariables {
  provider: string;
  auth_type: ProxyRoute["auth_type"];
  /** The provider's variables in the order its SDK reads them: `api_key.env_var` first, then `env`. */
  variables: string[];
  connections: string[];
  default_connection: string | null;
}

/**
 * Every provider's variables and the caller's connections, from the proxy's routing table (one
 * request). A custom API-key provider's `api_key.env_var` need not be listed in its `env`, so
 * those few definitions are read too; bundled ones always list it.
 */
async function providerVariables(client: DaemonClient): Promise<ProviderVariables[]> {
  const [{ routes }, summaries] = await Promise.all([
    client.get<ProxyRoutes>("/api/proxy/routes"),
    listProviders(client),
  ]);
  const custom = summaries.filter(
    (summary) => summary.source === "custom" && summary.auth_type === "api_key",
  );
  const envVars = new Map(
    await Promise.all(
      custom.map(async (summary) => {
        const definition = await getProvider(client, summary.name);
        return [summary.name, definition.api_key?.env_var] as const;
      }),
    ),
  );
  return routes
    .map((route) => {
      const envVar = envVars.get(route.provider);
      return {
        provider: route.provider,
        auth_type: route.auth_type,
        variables: [...new Set([...(envVar ? [envVar] : []), ...route.env])],
        connections: route.connections,
        default_connection: route.default_connection,
      };
    })
    .sort((a, b) => (a.provider < b.provider ? -1 : a.provider > b.provider ? 1 : 0));
}

/** The drift of one API-key provider; a key svc holds is compared by the daemon, never revealed. */
async function compare(
  client: DaemonClient,
  provider: string,
  connection: string | null,
  found: FoundKey | undefined,
): Promise<ProviderReport> {
  const where = found
    ? {
        variable: found.variable,
        source: found.source,
        ...(found.others.length > 0 ? { also_found: found.others } : {}),
      }
    : {};
  if (!connection) return { provider, ...where, connection: DEFAULT_CONNECTION, state: "env_only" };
  if (!found) return { provider, connection, state: "svc_only" };
  const { same } = await client.post<{ same: boolean }>(
    `/api/connections/${segment(provider)}/${segment(connection)}/compare`,
    { api_key: found.value },
  );
  return { provider, ...where, connection, state: same ? "same" : "different" };
}

/** An AWS key pair that cannot be imported as found: reported with why, and nothing is changed. */
function brokenPair(
  provider: string,
  connection: string | null,
  pair: BrokenKeyPair,
  scanOnly: boolean,
): ProviderReport {
  return {
    provider,
    variable: pair.variable,
    source: pair.source,
    connection: connection ?? DEFAULT_CONNECTION,
    // No usable pair here: with a connection, svc's stays as it is.
    state: connection ? "svc_only" : "env_only",
    ...(scanOnly ? {} : { result: connection ? ("unchanged" as const) : ("refused" as const) }),
    message: pair.problem,
  };
}

/** Imports a key svc does not hold; anything else is left as it is. */
async function settle(
  client: DaemonClient,
  report: ProviderReport,
  found: FoundKey | undefined,
  keyPair: boolean,
): Promise<void> {
  if (report.state === "same" || report.state === "svc_only") {
    report.result = "unchanged";
    return;
  }
  if (report.state === "different") {
    report.result = "kept";
    report.message = `svc keeps its ${report.provider} key; to use the one in ${report.source} instead, run \`svc logout ${report.provider} --connection ${report.connection}\`, then \`svc onboard\` again`;
    return;
  }
  const session = await client.post<AuthSession>("/api/auth/sessions", {
    provider: report.provider,
    connection: report.connection,
    via: "onboard",
  });
  try {
    await client.post<AuthSession>(`/api/auth/sessions/${segment(session.session_id)}/input`, {
      api_key: found!.value,
    });
    report.result = "imported";
  } catch (error) {
    await client.post(`/api/auth/sessions/${segment(session.session_id)}/cancel`).catch(() => undefined);
    // A key in the wrong format: the message is the provider's format hint, never the value.
    if (!(error instanceof InvalidInputError)) throw error;
    report.result = "refused";
    report.message = keyPair
      ? `the AWS key pair in ${report.source} is not usable: ${error.message}`
      : `the value of ${report.variable} in ${report.source} is not a ${report.provider} key: ${error.message}`;
  }
}

const STATES: Record<Drift, string> = {
  env_only: "only in env",
  svc_only: "only in svc",
  same: "both, same",
  different: "both, different",
};

const RESULTS: Record<ImportResult, string> = {
  imported: "imported",
  refused: "refused",
  unchanged: "unchanged",
  kept: "kept svc's key",
};

function printReport(context: CliContext, report: OnboardReport, scan: EnvScan): void {
  const { out } = context;
  const { colors } = out;
  const claimed = {
    already: "",
    local: ", claimed now on this machine",
    link: ", claimed now through the link",
  }[report.claim.claimed];
  const problems = report.sources.flatMap((source) => [
    ...(source.skipped ? [`${source.name}: not read (${source.skipped})`] : []),
    ...source.problems.map((problem) => `${source.name} line ${problem.line}: ${problem.reason} (ignored)`),
  ]);
  out.fields([
    ["daemon", report.daemon_url + (report.saved_base_url ? " (saved)" : "")],
    ["identity", `${report.identity.handle}${report.identity.created ? " (created)" : ""}`],
    [
      "account",
      `${report.claim.principal_id}${report.claim.principal_role ? ` (${report.claim.principal_role})` : ""}${claimed}`,
    ],
    ["scanned", scan.sources.map((source) => source.name).join(", ")],
  ]);
  for (const problem of problems) out.line(`  ${colors.yellow(problem)}`);
  out.line();

  if (report.providers.length === 0) {
    out.line("No API keys of known providers in the environment or the dotenv files here, and none in svc.");
  } else {
    const headers = ["PROVIDER", "VARIABLE", "SOURCE", "STATE", ...(report.scan_only ? [] : ["RESULT"])];
    out.table(
      headers,
      report.providers.map((provider) => [
        provider.provider,
        provider.variable ?? "-",
        provider.source ?? "-",
        STATES[provider.state],
        ...(provider.result
          ? [provider.result === "refused" ? colors.red(RESULTS.refused) : RESULTS[provider.result]]
          : []),
      ]),
    );
  }
  const notes: string[] = [];
  for (const provider of report.providers) {
    for (const other of provider.also_found ?? []) {
      if (other.same) continue;
      const what = other.variable === provider.variable ? "" : ` (${other.variable})`;
      notes.push(
        `${provider.provider}: ${other.source}${what} has a different value; ${provider.variable} from ${provider.source} counts`,
      );
    }
    if (provider.message) notes.push(`${provider.provider}: ${provider.message}`);
  }
  if (report.needs_login.length > 0) {
    notes.push(
      `OAuth providers to connect with \`svc login <provider>\`: ${report.needs_login
        .map((item) => `${item.provider} (${item.variables.join(", ")} set here)`)
        .join(", ")}`,
    );
  }
  if (notes.length > 0) out.line();
  for (const note of notes) out.line(note);
  out.line();

  const count = (result: ImportResult) => report.providers.filter((p) => p.result === result).length;
  if (report.scan_only) {
    const missing = report.providers.filter((provider) => provider.state === "env_only").length;
    out.line(
      `Scan only: nothing was imported${missing > 0 ? `; \`svc onboard\` would import ${missing} key${missing === 1 ? "" : "s"}` : ""}.`,
    );
  } else if (report.status === "unchanged") {
    out.line(`${colors.green("✓")} Unchanged: svc is already set up for this environment.`);
  } else {
    const imported = count("imported");
    out.line(
      `${colors.green("✓")} Set up: ${imported} key${imported === 1 ? "" : "s"} imported${count("refused") > 0 ? `, ${count("refused")} refused` : ""}.`,
    );
  }
}

function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("must be an absolute URL such as http://127.0.0.1:7998");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new InvalidArgumentError("must be an http(s) URL");
  if (url.username || url.password || url.search || url.hash) {
    throw new InvalidArgumentError("must be a plain http(s) URL (no credentials, query or fragment)");
  }
  return url.toString().replace(/\/+$/, "");
}

export function registerOnboardCommand(program: Command, contextFor: (command: Command) => CliContext): void {
  program
    .command("onboard")
    .description(
      "First-run setup: identity, registration and claim, and import of the API keys in the environment and ./.env* files (idempotent)",
    )
    .option("--base-url <url>", "daemon URL to save as daemon_base_url for later commands", parseBaseUrl)
    .option("--scan-only", "report drift between the environment and svc without importing anything")
    .action(async (options: OnboardOptions, command: Command) => {
      if (command.optsWithGlobals<GlobalOptions>().quiet) {
        throw new InvalidInputError(
          "svc onboard does not support --quiet: its report is what it does; use --json for a machine-readable one",
        );
      }
      await runOnboard(contextFor(command), options);
    });
}
