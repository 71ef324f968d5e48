import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import {
  type AuthSession,
  type AuthSessionStatus,
  FINAL_STATUSES,
  type WaitingFor,
} from "../../api/auth-sessions.ts";
import { equalSecrets } from "../../core/constant-time.ts";
import {
  AuthenticationFailedError,
  NotFoundError,
  OperationNotAllowedError,
  type SvcError,
  UnexpectedError,
} from "../../core/errors.ts";
import type { OAuthEndpoints } from "../../flows/oauth/endpoints.ts";
import type { DeviceAuthorization } from "../../flows/oauth/grants.ts";
import type { OAuthClient } from "../../flows/oauth/http.ts";
import type { SetupStep } from "../../providers/app-setup.ts";
import type { Flow } from "../../providers/schema.ts";
import type { RuntimeState } from "../../store/runtime-state.ts";
import { BROWSER_HANDLE_PREFIX } from "./browser-sessions.ts";

/** How long a person has to finish a browser step. */
export const AUTH_SESSION_TTL_MS = 10 * 60 * 1000;
/** Finished sessions stay readable this long, so a polling client sees the outcome. */
const FINISHED_RETENTION_MS = 5 * 60 * 1000;
/** Concurrent writers of one session retry this often before giving up (they never should). */
const MAX_UPDATE_ATTEMPTS = 50;
/** The boot id outlives any session by far; a Redis that lost it was reset. */
const BOOT_TTL_MS = 365 * 24 * 60 * 60 * 1000;
/** Wakes long polls: the message is the id of the session that changed. */
const CHANGES_CHANNEL = "auth-sessions";

/** Who started a session: only they may read it or feed it input over the API. */
export interface SessionOwner {
  handle: string;
  principalId: string;
  vaultId: string;
}

/** The OAuth part of a session: what the flow prepared and what the callback or poller needs. */
export interface OAuthSessionState {
  /** `{daemon URL}/auth/callback/oauth`, as sent in the authorization request. */
  redirectUri: string;
  endpoints: OAuthEndpoints;
  /**
   * The client the flow uses, without its secret (which stays in the vault: the session may sit in
   * Redis); absent while the person still has to enter one.
   */
  client?: Omit<OAuthClient, "client_secret">;
  /** PKCE: the single-use `state` bound to this session, and the verifier. */
  state?: string;
  verifier?: string;
  authorizationUrl?: string;
  device?: DeviceAuthorization & { expiresAt: Date };
  /** While the person must create an OAuth app: how, step by step. */
  setup?: SetupStep[];
}

export interface AuthSessionState {
  id: string;
  owner: SessionOwner;
  provider: string;
  connection: string;
  flow: Flow;
  force: boolean;
  /** What started it: `svc login`, `svc onboard`, or the dashboard; recorded in its audit events. */
  via: "login" | "onboard" | "dashboard";
  scopes?: string[];
  /** The tenant base URL of a multi-tenant provider. */
  baseUrl?: string;
  /** The URL the client reached this daemon at: links and the OAuth callback use it. */
  daemonUrl: string;
  status: AuthSessionStatus;
  /** Counts changes, so a long poll can tell what its client has not seen yet. */
  revision: number;
  waitingFor?: WaitingFor;
  oauth?: OAuthSessionState;
  /** The browser capability: the page URL carries it; only its holder may use the pages. */
  bridgeToken: string;
  /** Embedded in the form; a cross-site page cannot read it, so it cannot post the form. */
  csrfToken: string;
  createdAt: Date;
  expiresAt: Date;
  error?: { error: string; message: string };
}

const sessionKey = (id: string) => `auth-session:${id}`;
const stateKey = (state: string) => `oauth-state:${state}`;

/** Dates travel as ISO strings; these are the fields that hold one. */
function decode(raw: string): AuthSessionState {
  const session = JSON.parse(raw) as AuthSessionState;
  session.createdAt = new Date(session.createdAt);
  session.expiresAt = new Date(session.expiresAt);
  if (session.oauth?.device) session.oauth.device.expiresAt = new Date(session.oauth.device.expiresAt);
  return session;
}

/** Makes the caller's object the stored state (also dropping fields the stored state no longer has). */
function become(session: AuthSessionState, stored: AuthSessionState): void {
  for (const key of Object.keys(session) as Array<keyof AuthSessionState>) {
    if (!(key in stored)) delete session[key];
  }
  Object.assign(session, stored);
}

/** A change to an open session, made on its latest stored state. */
type Mutation = (session: AuthSessionState) => void;

/**
 * Auth sessions live in the runtime state: the daemon's memory (spec: lost on restart), or Redis
 * shared by replicas, so a login started on one replica finishes on any other. Each has a TTL; an
 * expired session moves to `expired` when next read and is forgotten a while after it finished.
 * Every change is a compare-and-set on the stored session (two replicas cannot lose each other's
 * update), followed by a message that wakes long polls on every replica.
 *
 * Callers hold an `AuthSessionState` object; every method that changes or re-reads a session
 * refreshes that object in place with what is stored.
 */
export class AuthSessionService {
  readonly #state: RuntimeState;
  readonly #now: () => Date;
  readonly #changes = new EventEmitter();
  /** Part of every id and state handed out since the runtime state began: another one means a restart. */
  #boot = "";
  #unsubscribe: (() => void) | undefined;
  #closed = false;

  constructor(state: RuntimeState, now: () => Date) {
    this.#state = state;
    this.#now = now;
    this.#changes.setMaxListeners(0);
  }

  /** Learns the boot id (shared by every replica of one Redis) and listens for changes. */
  async start(): Promise<void> {
    const candidate = randomBytes(6).toString("base64url");
    await this.#state.set("auth-boot", candidate, BOOT_TTL_MS, { ifAbsent: true });
    this.#boot = (await this.#state.get("auth-boot")) ?? candidate;
    this.#unsubscribe = await this.#state.subscribe(CHANGES_CHANNEL, (id) => this.#changes.emit(id));
  }

  /** How long the stored session (and its OAuth state) must be kept. */
  #ttlMs(session: AuthSessionState): number {
    const retention = FINAL_STATUSES.has(session.status) ? 0 : FINISHED_RETENTION_MS;
    return Math.max(1_000, session.expiresAt.getTime() - this.#now().getTime() + retention);
  }

  async create(
    input: Omit<
      AuthSessionState,
      | "id"
      | "status"
      | "revision"
      | "bridgeToken"
      | "csrfToken"
      | "createdAt"
      | "expiresAt"
      | "waitingFor"
      | "oauth"
    >,
  ): Promise<AuthSessionState> {
    const now = this.#now();
    const session: AuthSessionState = {
      ...input,
      id: `ses_${this.#boot}${randomBytes(16).toString("base64url")}`,
      status: "pending",
      revision: 0,
      bridgeToken: randomBytes(24).toString("base64url"),
      csrfToken: randomBytes(24).toString("base64url"),
      createdAt: now,
      expiresAt: new Date(now.getTime() + AUTH_SESSION_TTL_MS),
    };
    await this.#state.set(sessionKey(session.id), JSON.stringify(session), this.#ttlMs(session));
    return session;
  }

  #unknown(id: string): SvcError {
    if (id.startsWith(`ses_${this.#boot}`) || !id.startsWith("ses_")) {
      return new NotFoundError(`auth session ${id} not found: it finished long ago; start the login again`);
    }
    return new NotFoundError(
      this.#state.kind === "memory"
        ? `auth session ${id} not found: the daemon restarted since this login began (sessions live in memory); start the login again`
        : `auth session ${id} not found: svc's shared state (Redis) was reset since this login began; start the login again`,
    );
  }

  /** The stored session as it is now, expired first if its time is up; NotFoundError when unknown. */
  async #lookup(id: string): Promise<AuthSessionState> {
    const raw = await this.#state.get(sessionKey(id));
    if (raw === undefined) throw this.#unknown(id);
    const session = decode(raw);
    if (this.isOpen(session) && session.expiresAt.getTime() <= this.#now().getTime()) {
      await this.#update(session, (next) =>
        this.#finish(next, "expired", {
          error: "InputCancelledError",
          message: "the login was not completed in time; start it again",
        }),
      );
    }
    return session;
  }

  /** Refreshes `session` in place with what is stored now; false when it is gone. */
  async reload(session: AuthSessionState): Promise<boolean> {
    const stored = await this.byId(session.id);
    if (stored) become(session, stored);
    return stored !== undefined;
  }

  /** The session, for the daemon's own work (a device poller taking over); undefined when gone. */
  async byId(id: string): Promise<AuthSessionState | undefined> {
    try {
      return await this.#lookup(id);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  /** For the session's owner (PoP caller): someone else's session is reported as unknown. */
  async forOwner(id: string, handle: string): Promise<AuthSessionState> {
    const session = await this.#lookup(id);
    if (session.owner.handle !== handle) {
      throw new NotFoundError(
        `auth session ${id} not found for this identity; only the identity that started it can read it`,
      );
    }
    return session;
  }

  /** For a browser page: the bridge token in its URL must match. */
  async forBrowser(id: string, token: string | undefined): Promise<AuthSessionState> {
    const session = await this.#lookup(id);
    if (!token || !equalSecrets(token, session.bridgeToken)) {
      throw new AuthenticationFailedError("this link is not valid for that login; open the link svc printed");
    }
    return session;
  }

  checkCsrf(session: AuthSessionState, token: string | undefined): void {
    if (!token || !equalSecrets(token, session.csrfToken)) {
      throw new AuthenticationFailedError(
        "the form is stale or was not served by svc; reload the page and try again",
      );
    }
  }

  /**
   * An OAuth `state` for the session, stored so the callback (on any replica) finds it. It starts
   * with the boot id, so the callback can tell a restart from a forged or replayed state. The
   * caller records it in the session (`oauth.state`) with its next change.
   */
  async bindState(session: AuthSessionState, random: string): Promise<string> {
    const state = `${this.#boot}.${random}`;
    await this.#state.set(stateKey(state), session.id, this.#ttlMs(session));
    return state;
  }

  /** The session an OAuth callback belongs to. The state is consumed: a second use is refused, on every replica. */
  async takeState(state: string | undefined): Promise<AuthSessionState> {
    const id = state === undefined ? undefined : await this.#state.take(stateKey(state));
    const session = id === undefined ? undefined : await this.#lookup(id).catch(() => undefined);
    if (!session || session.oauth?.state !== state) {
      throw new AuthenticationFailedError(
        state?.includes(".") && !state.startsWith(`${this.#boot}.`)
          ? "svc restarted since this login began, so it cannot finish it; run `svc login` again"
          : "this sign-in answer does not belong to a login in progress (it was already used, or did not come from svc); run `svc login` again",
      );
    }
    return session;
  }

  /**
   * Applies `mutate` to the latest stored state of an open session and stores it, retrying when
   * another writer got there first; a finished session is left as it is. Refreshes `session`.
   * True when this call changed it.
   */
  async #update(session: AuthSessionState, mutate: Mutation): Promise<boolean> {
    const key = sessionKey(session.id);
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      const raw = await this.#state.get(key);
      if (raw === undefined) throw this.#unknown(session.id);
      const next = decode(raw);
      if (!this.isOpen(next)) {
        become(session, next);
        return false;
      }
      mutate(next);
      next.revision++;
      if (await this.#state.swap(key, raw, JSON.stringify(next), this.#ttlMs(next))) {
        become(session, next);
        if (!this.isOpen(next) && next.oauth?.state) await this.#state.delete(stateKey(next.oauth.state));
        await this.#state.publish(CHANGES_CHANNEL, next.id);
        return true;
      }
    }
    throw new UnexpectedError(`auth session ${session.id} is being changed by too many writers at once`);
  }

  /** Ends a session; the owner can still read the outcome for a while. */
  #finish(session: AuthSessionState, status: AuthSessionStatus, error?: AuthSessionState["error"]): void {
    session.status = status;
    if (error) session.error = error;
    delete session.waitingFor;
    session.expiresAt = new Date(this.#now().getTime() + FINISHED_RETENTION_MS);
  }

  /**
   * Tells long polls the session changed, also for changes that keep the status (a new poll
   * interval); `change` makes the change.
   */
  async changed(session: AuthSessionState, change: Mutation): Promise<void> {
    await this.#update(session, change);
  }

  /**
   * The session waits for the person: `pending` for input before the flow can start, else
   * `waiting_for_user`. `prepare` records what the step needs (the OAuth client, the URL, the device code).
   */
  async waitFor(session: AuthSessionState, waitingFor: WaitingFor, prepare?: Mutation): Promise<void> {
    await this.#update(session, (next) => {
      prepare?.(next);
      next.waitingFor = waitingFor;
      next.status = waitingFor === "client_credentials" ? "pending" : "waiting_for_user";
    });
  }

  /**
   * The input or answer the session waited for arrived and is being stored. `from` is the step it
   * must still be waiting for: of two concurrent submissions (on any replicas) one goes on, the
   * other is told the login moved on.
   */
  async processing(session: AuthSessionState, from: WaitingFor): Promise<void> {
    await this.#update(session, (next) => {
      if (next.waitingFor !== from) throw sessionClosed(next);
      delete next.waitingFor;
      next.status = "processing";
    });
    if (session.status !== "processing") throw sessionClosed(session);
  }

  /** The transitions to an end: true when this call ended the session (it was still open). */
  complete(session: AuthSessionState): Promise<boolean> {
    return this.#update(session, (next) => this.#finish(next, "completed"));
  }

  fail(session: AuthSessionState, error: SvcError): Promise<boolean> {
    return this.#update(session, (next) => this.#finish(next, "failed", error.toBody()));
  }

  expire(session: AuthSessionState, message: string): Promise<boolean> {
    return this.#update(session, (next) =>
      this.#finish(next, "expired", { error: "AuthenticationFailedError", message }),
    );
  }

  isOpen(session: AuthSessionState): boolean {
    return !FINAL_STATUSES.has(session.status);
  }

  cancel(session: AuthSessionState): Promise<boolean> {
    return this.#update(session, (next) =>
      this.#finish(next, "cancelled", { error: "InputCancelledError", message: "the login was cancelled" }),
    );
  }

  /**
   * Resolves when the session changes (on any replica), or after `ms`, and refreshes `session`.
   * With `after` (a revision the client saw) it resolves at once when the session already moved
   * past it.
   */
  async waitForChange(session: AuthSessionState, ms: number, after?: number): Promise<void> {
    if (after !== undefined && session.revision > after) return;
    if (ms <= 0 || this.#closed || !this.isOpen(session)) return;
    const seen = after ?? session.revision;
    const remaining = Math.min(ms, Math.max(0, session.expiresAt.getTime() - this.#now().getTime()) + 50);
    let wake: () => void = () => {};
    const changed = new Promise<void>((resolve) => {
      wake = resolve;
    });
    this.#changes.on(session.id, wake);
    const timer = setTimeout(wake, remaining);
    try {
      // A change made between the caller's read and this listener would wake no one: look once.
      if ((await this.reload(session)) && session.revision <= seen && !this.#closed) await changed;
    } finally {
      clearTimeout(timer);
      this.#changes.off(session.id, wake);
    }
    if (!(await this.reload(session))) throw this.#unknown(session.id);
  }

  /** Stops listening and answers every long poll now, so a closing daemon is not held open by them. */
  close(): void {
    this.#closed = true;
    this.#unsubscribe?.();
    for (const id of this.#changes.eventNames()) this.#changes.emit(id);
  }
}

/** Why a session takes no more input: how it ended, or the step it is at. */
export function sessionClosed(session: AuthSessionState): SvcError {
  return new OperationNotAllowedError(
    session.error?.message ?? `this login is already ${session.status.replaceAll("_", " ")}; start it again`,
  );
}

/** Where the person goes after a browser step: the dashboard that started the login, or the terminal. */
export function returnHint(session: AuthSessionState): string {
  return session.owner.handle.startsWith(BROWSER_HANDLE_PREFIX)
    ? "You can close this tab and return to the dashboard."
    : "Return to your terminal.";
}

export function sessionView(session: AuthSessionState): AuthSession {
  const url = nextUrl(session);
  const device = session.oauth?.device;
  return {
    session_id: session.id,
    provider: session.provider,
    connection: session.connection,
    flow: session.flow,
    status: session.status,
    revision: session.revision,
    ...(url ? { next: { type: "open_url" as const, url } } : {}),
    ...(session.waitingFor ? { waiting_for: session.waitingFor } : {}),
    ...(device && session.waitingFor === "device_code"
      ? {
          device: {
            user_code: device.user_code,
            verification_uri: device.verification_uri,
            ...(device.verification_uri_complete
              ? { verification_uri_complete: device.verification_uri_complete }
              : {}),
            expires_at: device.expiresAt.toISOString(),
            interval: device.interval,
          },
        }
      : {}),
    ...(session.oauth ? { redirect_uri: session.oauth.redirectUri } : {}),
    ...(session.waitingFor === "client_credentials" && session.oauth?.setup
      ? { client_setup: { steps: session.oauth.setup } }
      : {}),
    created_at: session.createdAt.toISOString(),
    expires_at: session.expiresAt.toISOString(),
    ...(session.error ? { error: session.error } : {}),
  };
}

/** Where the person goes next: the input page, the provider's sign-in, or the device page. */
function nextUrl(session: AuthSessionState): string | undefined {
  switch (session.waitingFor) {
    case "api_key":
    case "client_credentials":
      return bridgeUrl(session, "input");
    case "device_code":
      return bridgeUrl(session, "device");
    case "authorization":
      return session.oauth?.authorizationUrl;
    default:
      return undefined;
  }
}

/** A browser page of a session (the input form, the device page), carrying the session's bridge token. */
export function bridgeUrl(session: AuthSessionState, page: "input" | "device"): string {
  return `${session.daemonUrl}/api/auth/sessions/${session.id}/${page}?token=${session.bridgeToken}`;
}
