import { type Command, InvalidArgumentError, Option } from "commander";
import { type AuthSession, type CreateAuthSession, FINAL_STATUSES } from "../../api/auth-sessions.ts";
import { DEFAULT_CONNECTION, type LoggedOut } from "../../api/connections.ts";
import type { DaemonClient } from "../../client/daemon-client.ts";
import {
  ConnectionAlreadyExistsError,
  errorFromBody,
  InputCancelledError,
  InvalidInputError,
  UnexpectedError,
} from "../../core/errors.ts";
import { FLOWS, type Flow, type Provider } from "../../providers/schema.ts";
import { openBrowser } from "../browser.ts";
import type { CliContext } from "../context.ts";
import { parseConnectionName, segment } from "../format.ts";
import { cancelled } from "../prompt.ts";

export interface LoginOptions {
  connection: string;
  force?: boolean;
  browser?: boolean;
  flow?: Flow;
  scopes?: string[];
  baseUrl?: string;
}

/** How long one status request may wait for a change (the daemon allows 30 s). */
const LONG_POLL_SECONDS = 25;
/** Masked-prompt attempts when the daemon refuses the key's format. */
const KEY_ATTEMPTS = 3;

/**
 * `svc login <provider>`: starts an auth session, then collects the key from a masked prompt (a
 * terminal), the first line of stdin (a pipe), or the daemon's browser page (`--browser`), and
 * waits for the session to finish. A secret is never taken from the command line.
 */
export async function runLogin(context: CliContext, provider: string, options: LoginOptions): Promise<void> {
  const client = await context.daemon();
  const session = await startSession(context, client, provider, options);
  let final: AuthSession;
  try {
    final =
      options.browser || session.flow !== "api_key"
        ? await completeInBrowser(context, client, session)
        : await completeWithKey(context, client, session);
  } catch (error) {
    // Giving up (no key, refused keys, cancelled prompt): the browser link must stop working too.
    await client.post(`/api/auth/sessions/${segment(session.session_id)}/cancel`).catch(() => undefined);
    throw error;
  }
  if (final.status !== "completed") {
    throw errorFromBody(final.error, `the login ended as ${final.status.replaceAll("_", " ")}`);
  }
  if (context.out.options.json) context.out.json(final);
  else
    context.out.status(
      `${context.out.colors.green("✓")} Connected ${final.provider} (connection "${final.connection}")`,
    );
}

/** Creates the session; an existing connection is replaced only with --force or a "yes" on a terminal. */
async function startSession(
  context: CliContext,
  client: DaemonClient,
  provider: string,
  options: LoginOptions,
): Promise<AuthSession> {
  const body: CreateAuthSession = {
    provider,
    connection: options.connection,
    force: Boolean(options.force),
    ...(options.flow ? { flow: options.flow } : {}),
    ...(options.scopes ? { scopes: options.scopes } : {}),
    ...(options.baseUrl ? { base_url: options.baseUrl } : {}),
  };
  try {
    return await client.post<AuthSession>("/api/auth/sessions", body);
  } catch (error) {
    // Not on a terminal the daemon's 409 stands (exit 6): a script must say --force.
    if (!(error instanceof ConnectionAlreadyExistsError) || options.force || !context.io.stdinIsTty)
      throw error;
    const replace = await context.prompter.confirm(
      `${provider} already has a connection "${options.connection}". Replace it?`,
    );
    if (replace === undefined) throw cancelled("login");
    if (!replace) {
      throw new InputCancelledError(`login cancelled; the connection "${options.connection}" was kept`);
    }
    return client.post<AuthSession>("/api/auth/sessions", { ...body, force: true });
  }
}

/** The API-key path: a masked prompt on a terminal (re-asked when the format is refused), else one line of stdin. */
async function completeWithKey(
  context: CliContext,
  client: DaemonClient,
  session: AuthSession,
): Promise<AuthSession> {
  const submit = (apiKey: string) =>
    client.post<AuthSession>(`/api/auth/sessions/${segment(session.session_id)}/input`, { api_key: apiKey });

  if (!context.io.stdinIsTty) {
    const key = (await context.prompter.readLine()).trim();
    if (!key) {
      throw new InvalidInputError(
        `no API key on standard input; pipe it in (printf '%s\\n' "$KEY" | svc login ${session.provider}), run svc in a terminal for a masked prompt, or use --browser`,
      );
    }
    return submit(key);
  }

  const definition = await client
    .get<Provider>(`/api/providers/${segment(session.provider)}`)
    .catch(() => undefined);
  const name = definition?.display_name ?? session.provider;
  const hint = definition?.api_key?.key_pattern_hint;
  context.out.status(`Logging in to ${name} (connection "${session.connection}")`);
  for (let attempt = 1; ; attempt++) {
    const key = await context.prompter.secret(`${name} API key${hint ? ` (${hint})` : ""}`);
    if (key === undefined) throw cancelled("login");
    try {
      return await submit(key);
    } catch (error) {
      // The format was refused and the session still waits: say why and ask again.
      if (!(error instanceof InvalidInputError) || attempt >= KEY_ATTEMPTS) throw error;
      context.out.warn(error.message);
    }
  }
}

/** The browser path: print (and open) the session's page, then long-poll until the session finishes. */
async function completeInBrowser(
  context: CliContext,
  client: DaemonClient,
  session: AuthSession,
): Promise<AuthSession> {
  const url = session.next?.url;
  if (!url) throw new UnexpectedError("the daemon gave no page to open for this login");
  const what = session.flow === "api_key" ? "enter the API key" : "sign in";
  context.out.notice(`Open this link in a browser to ${what}:\n  ${url}`);
  if (openBrowser(url, context.io.env)) context.out.status("Opening your browser…");
  context.out.status(
    `Waiting for the browser (the link works until ${new Date(session.expires_at).toLocaleTimeString()}; Ctrl-C stops waiting)…`,
  );
  let current = session;
  while (!FINAL_STATUSES.has(current.status)) {
    const previous = current.status;
    current = await client.get<AuthSession>(
      `/api/auth/sessions/${segment(session.session_id)}?wait=${LONG_POLL_SECONDS}`,
      { timeoutMs: (LONG_POLL_SECONDS + 15) * 1000 },
    );
    if (current.status !== previous && !FINAL_STATUSES.has(current.status)) {
      context.out.status(`… ${current.status.replaceAll("_", " ")}`);
    }
  }
  return current;
}

export async function runLogout(context: CliContext, provider: string, connection: string): Promise<void> {
  const client = await context.daemon();
  const result = await client.post<LoggedOut>(
    `/api/connections/${segment(provider)}/${segment(connection)}/logout`,
  );
  if (context.out.options.json) {
    context.out.json(result);
    return;
  }
  context.out.status(
    `${context.out.colors.green("✓")} Logged out ${result.provider} (connection "${result.connection}")`,
  );
  context.out.status(
    result.default_connection
      ? `Default ${result.provider} connection: "${result.default_connection}"`
      : `No ${result.provider} connections left`,
  );
}

function parseScopes(value: string): string[] {
  const scopes = value
    .split(",")
    .map((scope) => scope.trim())
    .filter(Boolean);
  if (scopes.length === 0) throw new InvalidArgumentError("list at least one scope (s1,s2)");
  return scopes;
}

export function registerLoginCommands(program: Command, contextFor: (command: Command) => CliContext): void {
  program
    .command("login")
    .description(
      "Connect a provider: API keys come from a masked prompt, the first line of stdin, or --browser; never from arguments",
    )
    .argument("<provider>", "provider name (see `svc provider list`)")
    .option("--connection <name>", "connection name", parseConnectionName, DEFAULT_CONNECTION)
    .option("--force", "replace an existing connection of that name without asking")
    .option("--browser", "enter the key on the daemon's browser page instead of the terminal")
    .addOption(new Option("--flow <type>", "authentication flow (defaults to the provider's)").choices(FLOWS))
    .option("--scopes <s1,s2>", "OAuth scopes, comma-separated", parseScopes)
    .option("--base-url <url>", "tenant base URL of a multi-tenant provider")
    .action(async (provider: string, options: LoginOptions, command: Command) =>
      runLogin(contextFor(command), provider, options),
    );
  program
    .command("logout")
    .description("Remove one connection record (the remote provider is not contacted)")
    .argument("<provider>", "provider name")
    .option("--connection <name>", "connection name", parseConnectionName, DEFAULT_CONNECTION)
    .action(async (provider: string, options: { connection: string }, command: Command) =>
      runLogout(contextFor(command), provider, options.connection),
    );
}
