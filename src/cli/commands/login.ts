import { setTimeout as sleep } from "node:timers/promises";
import { type Command, InvalidArgumentError, Option } from "commander";
import { FINAL_STATUSES } from "../../api/auth-session-states.ts";
import type { AuthSession, CreateAuthSession } from "../../api/auth-sessions.ts";
import type { LoggedOut } from "../../api/connections.ts";
import { DEFAULT_CONNECTION } from "../../api/names.ts";
import { getProvider } from "../../client/daemon-api.ts";
import type { DaemonClient } from "../../client/daemon-client.ts";
import {
  AuthenticationFailedError,
  ConnectionAlreadyExistsError,
  DaemonUnavailableError,
  errorFromBody,
  InputCancelledError,
  InvalidInputError,
  NotFoundError,
} from "../../core/errors.ts";
import { FLOWS, type Flow } from "../../providers/vocabulary.ts";
import { hasDisplay, openBrowser } from "../browser.ts";
import type { CliContext } from "../context.ts";
import { parseConnectionName, segment } from "../format.ts";
import { onInterrupt } from "../interrupt.ts";
import { instructions, loginProgress, statusText } from "../login-progress.ts";
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
/** Cancelling is best effort: the login ends either way, and the daemon may be gone. */
const CANCEL_TIMEOUT_MS = 3000;
/** How long a waiting login keeps asking an unreachable daemon (a restart takes a few seconds). */
const RECONNECT_MS = 10_000;
const RECONNECT_STEP_MS = 500;

/**
 * `svc login <provider>`: starts an auth session. An API key comes from a masked prompt (a
 * terminal), the first line of stdin (a pipe), or the daemon's browser page (`--browser`); an OAuth
 * login goes through the pages the session names. A secret is never taken from the command line.
 * With --json the outcome is the last line on stdout: the completed session, or (printed by
 * main) the error body.
 */
export async function runLogin(context: CliContext, provider: string, options: LoginOptions): Promise<void> {
  const client = await context.daemon();
  const session = await startSession(context, client, provider, options);
  let final: AuthSession;
  try {
    final =
      options.browser || session.flow !== "api_key"
        ? await followSession(context, client, session)
        : await completeWithKey(context, client, session);
  } catch (error) {
    // Giving up (no key, refused keys, cancelled prompt, Ctrl-C): the browser link must stop working too.
    await client
      .post(`/api/auth/sessions/${segment(session.session_id)}/cancel`, undefined, {
        timeoutMs: CANCEL_TIMEOUT_MS,
      })
      .catch(() => undefined);
    throw error;
  }
  if (final.status !== "completed") {
    throw errorFromBody(final.error, `the login ended as ${final.status.replaceAll("_", " ")}`);
  }
  if (context.out.options.json) context.out.line(JSON.stringify(final));
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

  const definition = await getProvider(client, session.provider).catch(() => undefined);
  if (definition?.auth_type === "aws_sigv4") return submit(await awsCredentialsText(context, session));
  if (!context.io.stdinIsTty) {
    const key = (await context.prompter.readLine()).trim();
    if (!key) {
      throw new InvalidInputError(
        `no API key on standard input; pipe it in (printf '%s\\n' "$KEY" | svc login ${session.provider}), run svc in a terminal for a masked prompt, or use --browser`,
      );
    }
    return submit(key);
  }

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

/**
 * AWS credentials: all of stdin (one JSON object or KEY=value lines, checked by the daemon), or on a
 * terminal one prompt per field, the secrets masked.
 */
async function awsCredentialsText(context: CliContext, session: AuthSession): Promise<string> {
  if (!context.io.stdinIsTty) {
    const text = await context.prompter.readAll();
    if (!text.trim()) {
      throw new InvalidInputError(
        `no AWS credentials on standard input; pipe KEY=value lines (aws configure export-credentials --format env | svc login ${session.provider}) or one JSON object, run svc in a terminal for prompts, or use --browser`,
      );
    }
    return text;
  }
  context.out.status(`Logging in to ${session.provider} (connection "${session.connection}")`);
  const ask = async (value: Promise<string | undefined>) => {
    const answer = await value;
    if (answer === undefined) throw cancelled("login");
    return answer.trim();
  };
  const fields: Record<string, string> = {
    access_key_id: await ask(context.prompter.secret("AWS access key id (AKIA... or ASIA...)")),
    secret_access_key: await ask(context.prompter.secret("AWS secret access key")),
    region: await ask(
      context.prompter.text("Default region, given to programs as AWS_REGION (empty for none)"),
    ),
  };
  const temporary = await context.prompter.confirm("Temporary credentials (with a session token)?");
  if (temporary === undefined) throw cancelled("login");
  if (temporary) fields.session_token = await ask(context.prompter.secret("AWS session token"));
  return JSON.stringify(Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== "")));
}

/**
 * The browser paths: shows (and opens) every page the session asks for, then long-polls until it
 * finishes. With --json an OAuth login prints each open state as one line on stdout (an API key's
 * stdout stays one JSON document: the final session). Ctrl-C stops waiting with InputCancelledError.
 */
async function followSession(
  context: CliContext,
  client: DaemonClient,
  session: AuthSession,
): Promise<AuthSession> {
  const name = await getProvider(client, session.provider)
    .then((definition) => definition.display_name)
    .catch(() => session.provider);
  const states = context.out.options.json && session.flow !== "api_key";
  // --browser asked for a browser; an OAuth login opens one only where a graphical one can run.
  const open = session.flow === "api_key" || hasDisplay(context.io.env);
  const progress = loginProgress(context.out, context.io.stderr);
  const interrupt = onInterrupt();
  let previous: AuthSession | undefined;
  let current = session;
  try {
    while (!FINAL_STATUSES.has(current.status)) {
      if (states && current.revision !== previous?.revision) context.out.line(JSON.stringify(current));
      const steps = instructions(previous, current, name);
      if (steps) {
        progress.notice(steps);
        if (open && openBrowser(current.next!.url, context.io.env)) progress.note("Opening your browser…");
        if (!previous) {
          const until = new Date(current.expires_at).toLocaleTimeString();
          progress.note(`The login stays open until ${until}; Ctrl-C cancels it.`);
        }
      }
      progress.status(statusText(current, name));
      previous = current;
      current = await nextState(client, current, interrupt.interrupted);
    }
    return current;
  } finally {
    progress.stop();
    interrupt.dispose();
  }
}

/**
 * The session's next state: a long poll, given up on Ctrl-C. A daemon that is briefly unreachable
 * (restarting) is asked again, so the one that comes back can say whether it still knows the login.
 */
async function nextState(
  client: DaemonClient,
  current: AuthSession,
  interrupted: Promise<void>,
): Promise<AuthSession> {
  const path = `/api/auth/sessions/${segment(current.session_id)}`;
  let unreachableSince: number | undefined;
  for (;;) {
    try {
      // `after`: a change that happened before this request arrived is answered at once, not missed.
      const poll = client.get<AuthSession>(`${path}?wait=${LONG_POLL_SECONDS}&after=${current.revision}`, {
        timeoutMs: (LONG_POLL_SECONDS + 15) * 1000,
      });
      const next = await unlessInterrupted(poll, interrupted);
      if (next.waiting_for === "client_credentials" && next.revision === current.revision) {
        // A whole poll without news: the client may have been stored meanwhile by another route
        // (another login's page); resume picks it up, and refuses (ignored) while there is none.
        return await client.post<AuthSession>(`${path}/resume`).catch(() => next);
      }
      return next;
    } catch (error) {
      // The daemon forgot the session (it restarted): the login failed; nothing is "not found".
      if (error instanceof NotFoundError) throw new AuthenticationFailedError(error.message);
      if (!(error instanceof DaemonUnavailableError)) throw error;
      unreachableSince ??= Date.now();
      if (Date.now() - unreachableSince > RECONNECT_MS) throw error;
    }
    await unlessInterrupted(sleep(RECONNECT_STEP_MS), interrupted);
  }
}

/** `promise`, unless Ctrl-C comes first: then the login is cancelled and the promise dropped. */
async function unlessInterrupted<T>(promise: Promise<T>, interrupted: Promise<void>): Promise<T> {
  const outcome = await Promise.race([
    promise.then((value) => ({ value })),
    interrupted.then(() => undefined),
  ]);
  if (!outcome) throw cancelled("login");
  return outcome.value;
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
      "Connect a provider: OAuth through the browser (or a device code); API keys from a masked prompt, the first line of stdin, or --browser; never from arguments",
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
