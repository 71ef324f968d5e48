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
} from "../../core/errors.ts";
import type { OAuthEndpoints } from "../../flows/oauth/endpoints.ts";
import type { DeviceAuthorization } from "../../flows/oauth/grants.ts";
import type { OAuthClient } from "../../flows/oauth/http.ts";
import type { Flow } from "../../providers/schema.ts";
import { BROWSER_HANDLE_PREFIX } from "./browser-sessions.ts";

/** How long a person has to finish a browser step. */
export const AUTH_SESSION_TTL_MS = 10 * 60 * 1000;
/** Finished sessions stay readable this long, so a polling client sees the outcome. */
const FINISHED_RETENTION_MS = 5 * 60 * 1000;
const MAX_SESSIONS = 10_000;

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
  /** The client the flow uses; absent while the person still has to enter one. */
  client?: OAuthClient;
  /** PKCE: the single-use `state` bound to this session, and the verifier. */
  state?: string;
  verifier?: string;
  authorizationUrl?: string;
  device?: DeviceAuthorization & { expiresAt: Date };
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

/**
 * Auth sessions live in daemon memory only (spec: lost on restart). Each has a TTL; an expired
 * session moves to `expired` and is forgotten a while after it finished. Status changes are
 * broadcast so a long-polling client answers at once.
 */
export class AuthSessionService {
  readonly #sessions = new Map<string, AuthSessionState>();
  /** OAuth `state` → session id; an entry is removed when used, so a state works once. */
  readonly #states = new Map<string, string>();
  /** Part of every id and state this process hands out: an unknown one from another boot means a restart. */
  readonly #boot = randomBytes(6).toString("base64url");
  readonly #changes = new EventEmitter();
  readonly #now: () => Date;
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;

  constructor(now: () => Date) {
    this.#now = now;
    this.#changes.setMaxListeners(0);
    this.#sweeper = setInterval(() => this.sweep(), 30_000);
    this.#sweeper.unref();
  }

  create(
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
  ): AuthSessionState {
    this.sweep();
    if (this.#sessions.size >= MAX_SESSIONS) {
      throw new OperationNotAllowedError(
        "too many auth sessions are in flight; finish or wait for some first",
      );
    }
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
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The session, expired if its time is up; NotFoundError when unknown. */
  #lookup(id: string): AuthSessionState {
    const session = this.#sessions.get(id);
    if (!session) {
      throw new NotFoundError(
        id.startsWith(`ses_${this.#boot}`) || !id.startsWith("ses_")
          ? `auth session ${id} not found: it finished long ago; start the login again`
          : `auth session ${id} not found: the daemon restarted since this login began (sessions live in memory); start the login again`,
      );
    }
    if (!FINAL_STATUSES.has(session.status) && session.expiresAt.getTime() <= this.#now().getTime()) {
      this.#set(session, "expired", {
        error: "InputCancelledError",
        message: "the login was not completed in time; start it again",
      });
    }
    return session;
  }

  /** For the session's owner (PoP caller): someone else's session is reported as unknown. */
  forOwner(id: string, handle: string): AuthSessionState {
    const session = this.#lookup(id);
    if (session.owner.handle !== handle) {
      throw new NotFoundError(
        `auth session ${id} not found for this identity; only the identity that started it can read it`,
      );
    }
    return session;
  }

  /** For a browser page: the bridge token in its URL must match. */
  forBrowser(id: string, token: string | undefined): AuthSessionState {
    const session = this.#lookup(id);
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
   * Binds an OAuth `state` to the session. The state starts with this boot's id, so the callback
   * can tell a restarted daemon from a forged or replayed state.
   */
  bindState(session: AuthSessionState, random: string): string {
    const state = `${this.#boot}.${random}`;
    this.#states.set(state, session.id);
    return state;
  }

  /** The session an OAuth callback belongs to. The state is consumed: a second use is refused. */
  takeState(state: string | undefined): AuthSessionState {
    const id = state === undefined ? undefined : this.#states.get(state);
    if (state !== undefined) this.#states.delete(state);
    const session = id === undefined ? undefined : this.#sessions.get(id);
    if (!session || session.oauth?.state !== state) {
      throw new AuthenticationFailedError(
        state?.includes(".") && !state.startsWith(`${this.#boot}.`)
          ? "svc restarted since this login began, so it cannot finish it; run `svc login` again"
          : "this sign-in answer does not belong to a login in progress (it was already used, or did not come from svc); run `svc login` again",
      );
    }
    return this.#lookup(session.id);
  }

  /** Moves a session on; a finished one stays as it is. */
  #set(session: AuthSessionState, status: AuthSessionStatus, error?: AuthSessionState["error"]): void {
    if (FINAL_STATUSES.has(session.status)) return;
    session.status = status;
    if (error) session.error = error;
    if (FINAL_STATUSES.has(status)) {
      delete session.waitingFor;
      if (session.oauth?.state) this.#states.delete(session.oauth.state);
      // Forget it a while after it finished; the owner can still read the outcome until then.
      session.expiresAt = new Date(this.#now().getTime() + FINISHED_RETENTION_MS);
    }
    this.changed(session);
  }

  /** Tells long polls the session changed (also for changes that keep the status, like a new poll interval). */
  changed(session: AuthSessionState): void {
    session.revision++;
    this.#changes.emit(session.id);
  }

  /** The session waits for the person: `pending` for input before the flow can start, else `waiting_for_user`. */
  waitFor(session: AuthSessionState, waitingFor: WaitingFor): void {
    session.waitingFor = waitingFor;
    this.#set(session, waitingFor === "client_credentials" ? "pending" : "waiting_for_user");
  }

  /** The provider decides how long a device code lives (no cap of ours). */
  extendUntil(session: AuthSessionState, expiresAt: Date): void {
    if (!FINAL_STATUSES.has(session.status)) session.expiresAt = expiresAt;
  }

  processing(session: AuthSessionState): void {
    delete session.waitingFor;
    this.#set(session, "processing");
  }

  complete(session: AuthSessionState): void {
    this.#set(session, "completed");
  }

  fail(session: AuthSessionState, error: SvcError): void {
    this.#set(session, "failed", error.toBody());
  }

  expire(session: AuthSessionState, message: string): void {
    this.#set(session, "expired", { error: "AuthenticationFailedError", message });
  }

  isOpen(session: AuthSessionState): boolean {
    return !FINAL_STATUSES.has(session.status);
  }

  cancel(session: AuthSessionState): void {
    this.#set(session, "cancelled", { error: "InputCancelledError", message: "the login was cancelled" });
  }

  /**
   * Resolves when the session changes, or after `ms`. With `after` (a revision the client saw) it
   * resolves at once when the session already moved past it.
   */
  async waitForChange(session: AuthSessionState, ms: number, after?: number): Promise<void> {
    if (after !== undefined && session.revision > after) return;
    if (ms <= 0 || this.#closed || FINAL_STATUSES.has(session.status)) return;
    const remaining = Math.min(ms, Math.max(0, session.expiresAt.getTime() - this.#now().getTime()) + 50);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#changes.off(session.id, done);
        resolve();
      };
      const timer = setTimeout(done, remaining);
      this.#changes.on(session.id, done);
    });
    this.#lookup(session.id);
  }

  /** Marks timed-out sessions expired and forgets finished ones past their retention. */
  sweep(): void {
    const now = this.#now().getTime();
    for (const session of this.#sessions.values()) {
      if (session.expiresAt.getTime() > now) continue;
      if (FINAL_STATUSES.has(session.status)) this.#sessions.delete(session.id);
      else this.#lookup(session.id);
    }
  }

  /** Stops the sweeper and answers every long poll now, so a closing daemon is not held open by them. */
  close(): void {
    clearInterval(this.#sweeper);
    this.#closed = true;
    for (const id of this.#changes.eventNames()) this.#changes.emit(id);
  }
}

/** The API view of a session. */
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
