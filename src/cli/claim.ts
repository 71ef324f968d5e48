import { setTimeout as sleep } from "node:timers/promises";
import type { Whoami } from "../api/health.ts";
import type { RegisteredIdentityRecord } from "../api/identities.ts";
import { DaemonClient } from "../client/daemon-client.ts";
import { registerIdentity } from "../client/session.ts";
import {
  AuthenticationFailedError,
  DaemonUnavailableError,
  InputCancelledError,
  OperationNotAllowedError,
} from "../core/errors.ts";
import type { LocalIdentity } from "../identity/identity-files.ts";
import { hasDisplay, openBrowser } from "./browser.ts";
import type { CliContext } from "./context.ts";
import { onInterrupt } from "./interrupt.ts";
import { loginProgress } from "./login-progress.ts";

/** How often the claim is checked while the person confirms it in the browser. */
const POLL_MS = 1000;
/** How long an unreachable daemon is asked again while waiting (a restart takes a few seconds). */
const RECONNECT_MS = 10_000;

/** How the identity came to be claimed: before this run, by the local proof now, or by a link now. */
export type ClaimMethod = "already" | "local" | "link";

export interface ClaimOutcome {
  identity: string;
  principal_id: string;
  principal_role?: "admin" | "user";
  vault_id?: string;
  claimed: ClaimMethod;
}

export interface EnsureClaimedOptions {
  /** The identity to claim; the active one by default. */
  identity?: LocalIdentity;
  /** With --json, print the claim's progress as JSON lines on stdout (`svc onboard`'s NDJSON). */
  events?: boolean;
}

/**
 * Makes sure the identity is registered and claimed by an account. A daemon sharing this SVC_HOME
 * claims it at once (the local proof); any other daemon answers with a one-time claim link: the
 * link is shown (and opened where a browser can run), and svc waits until someone signs in there
 * and confirms, the link expires (AuthenticationFailedError), or Ctrl-C (InputCancelledError).
 */
export async function ensureClaimed(
  context: CliContext,
  options: EnsureClaimedOptions = {},
): Promise<ClaimOutcome> {
  const identity = options.identity ?? context.identity();
  const connected = await context.daemonAs(identity);
  // A client that does not register by itself, so that this function sees the registration's answer.
  const client = new DaemonClient({
    baseUrl: connected.baseUrl,
    identity,
    trace: (event) => context.log.debug("daemon request", event),
  });
  const known = await client.get<Whoami>("/api/whoami").catch((error: unknown) => {
    if (error instanceof AuthenticationFailedError) return undefined; // not registered yet
    throw error;
  });
  if (known?.principal_id) return outcome(known, "already");
  const registered = await registerIdentity(client, identity, context.layout);
  if (registered.principal_id) return outcome(registered, "local");
  if (!registered.claim_url || !registered.claim_expires_at) {
    throw new OperationNotAllowedError(
      `the identity "${identity.handle}" is not claimed by an account and the daemon at ${client.baseUrl} offers no claim link; ask its admin to claim it`,
    );
  }
  return claimByLink(context, client, registered, Boolean(options.events));
}

async function claimByLink(
  context: CliContext,
  client: DaemonClient,
  registered: RegisteredIdentityRecord,
  events: boolean,
): Promise<ClaimOutcome> {
  const url = registered.claim_url!;
  const expiresAt = new Date(registered.claim_expires_at!);
  const { out } = context;
  // The link is a capability: it goes to the person (stderr) and --json readers, never to the debug log.
  context.log.debug("identity not claimed; waiting for its claim link", {
    identity: registered.handle,
    expires_at: registered.claim_expires_at,
  });
  if (events) {
    out.line(
      JSON.stringify({
        type: "claim",
        status: "waiting_for_claim",
        identity: registered.handle,
        claim_url: url,
        claim_expires_at: registered.claim_expires_at,
      }),
    );
  }
  const progress = loginProgress(out, context.io.stderr);
  const interrupt = onInterrupt();
  let whoami: Whoami;
  try {
    progress.notice([
      `The daemon at ${client.baseUrl} does not know whose identity "${registered.handle}" is yet.`,
      "Open this link in a browser, sign in (or create an account) and confirm:",
      `  ${url}`,
    ]);
    if (hasDisplay(context.io.env) && openBrowser(url, context.io.env))
      progress.note("Opening your browser…");
    progress.note(`The link works until ${expiresAt.toLocaleTimeString()}; Ctrl-C cancels.`);
    progress.status("Waiting for you to confirm in the browser…");
    whoami = await waitForClaim(() => client.get<Whoami>("/api/whoami", { timeoutMs: 5000 }), {
      expiresAt,
      interrupted: interrupt.interrupted,
    });
  } finally {
    progress.stop();
    interrupt.dispose();
  }
  const claimed = outcome(whoami, "link");
  if (events) out.line(JSON.stringify({ type: "claim", status: "claimed", ...claimed }));
  out.status(
    `${out.colors.green("✓")} ${claimed.identity} now acts for ${claimed.principal_id}${claimed.principal_role ? ` (${claimed.principal_role})` : ""}`,
  );
  return claimed;
}

export interface WaitForClaimOptions {
  expiresAt: Date;
  /** Resolves on Ctrl-C. */
  interrupted: Promise<void>;
  now?: () => number;
  pause?: (ms: number) => Promise<void>;
  pollMs?: number;
}

/**
 * Polls `whoami` until it shows a principal. Expiry of the link is AuthenticationFailedError
 * saying what to do; Ctrl-C is InputCancelledError; a daemon unreachable for longer than 10 s is
 * DaemonUnavailableError.
 */
export async function waitForClaim(
  whoami: () => Promise<Whoami>,
  options: WaitForClaimOptions,
): Promise<Whoami> {
  const now = options.now ?? Date.now;
  const pause = options.pause ?? ((ms: number) => sleep(ms));
  const pollMs = options.pollMs ?? POLL_MS;
  let cancelled = false;
  const interrupted = options.interrupted.then(() => {
    cancelled = true;
  });
  const race = async <T>(promise: Promise<T>): Promise<T> => {
    const result = await Promise.race([
      promise.then((value) => ({ value })),
      interrupted.then(() => undefined),
    ]);
    if (!result || cancelled) {
      throw new InputCancelledError(
        "claim cancelled; the identity stays unclaimed (run `svc onboard` to claim it later)",
      );
    }
    return result.value;
  };
  let unreachableSince: number | undefined;
  for (;;) {
    try {
      const current = await race(whoami());
      unreachableSince = undefined;
      if (current.principal_id) return current;
    } catch (error) {
      if (!(error instanceof DaemonUnavailableError)) throw error;
      unreachableSince ??= now();
      if (now() - unreachableSince > RECONNECT_MS) throw error;
    }
    if (now() >= options.expiresAt.getTime()) {
      throw new AuthenticationFailedError(
        `the claim link expired at ${options.expiresAt.toLocaleTimeString()} before anyone confirmed it; run \`svc onboard\` for a new link, open it, sign in and confirm`,
      );
    }
    await race(pause(pollMs));
  }
}

function outcome(record: Whoami | RegisteredIdentityRecord, claimed: ClaimMethod): ClaimOutcome {
  const identity = "identity" in record ? record.identity : record.handle;
  return {
    identity,
    principal_id: record.principal_id!,
    ...(record.principal_role ? { principal_role: record.principal_role } : {}),
    ...(record.vault_id ? { vault_id: record.vault_id } : {}),
    claimed,
  };
}

/**
 * The client hook for a refused request: when the identity turns out to have no account yet
 * (whoami shows no principal), run the claim and let the client send the request again.
 */
export function claimOnRefusal(
  context: CliContext,
  identity: LocalIdentity,
  baseUrl: string,
): () => Promise<boolean> {
  return async () => {
    const plain = new DaemonClient({ baseUrl, identity });
    const whoami = await plain.get<Whoami>("/api/whoami").catch(() => undefined);
    if (!whoami || whoami.principal_id) return false;
    await ensureClaimed(context, { identity });
    return true;
  };
}
