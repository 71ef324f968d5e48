import { randomBytes, timingSafeEqual } from "node:crypto";
import { EventEmitter } from "node:events";
import { type AuthSession, type AuthSessionStatus, FINAL_STATUSES } from "../../api/auth-sessions.ts";
import {
  AuthenticationFailedError,
  NotFoundError,
  OperationNotAllowedError,
  type SvcError,
} from "../../core/errors.ts";
import { newId } from "../../core/ids.ts";
import type { Flow } from "../../providers/schema.ts";

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

export interface AuthSessionState {
  id: string;
  owner: SessionOwner;
  provider: string;
  connection: string;
  flow: Flow;
  force: boolean;
  scopes?: string[];
  baseUrl?: string;
  status: AuthSessionStatus;
  /** The browser capability: the page URL carries it; only its holder may use the pages. */
  bridgeToken: string;
  /** Embedded in the form; a cross-site page cannot read it, so it cannot post the form. */
  csrfToken: string;
  createdAt: Date;
  expiresAt: Date;
  error?: { error: string; message: string };
}

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Auth sessions live in daemon memory only (spec: lost on restart). Each has a TTL; an expired
 * session moves to `expired` and is forgotten a while after it finished. Status changes are
 * broadcast so a long-polling client answers at once.
 */
export class AuthSessionService {
  readonly #sessions = new Map<string, AuthSessionState>();
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
    input: Omit<AuthSessionState, "id" | "status" | "bridgeToken" | "csrfToken" | "createdAt" | "expiresAt">,
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
      id: newId("ses", 16),
      status: "waiting_for_user",
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
        `auth session ${id} not found: it finished long ago, or the daemon restarted (sessions live in memory); start the login again`,
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
    if (!token || !sameSecret(token, session.bridgeToken)) {
      throw new AuthenticationFailedError("this link is not valid for that login; open the link svc printed");
    }
    return session;
  }

  checkCsrf(session: AuthSessionState, token: string | undefined): void {
    if (!token || !sameSecret(token, session.csrfToken)) {
      throw new AuthenticationFailedError(
        "the form is stale or was not served by svc; reload the page and try again",
      );
    }
  }

  /** Moves a session on; a finished one stays as it is. */
  #set(session: AuthSessionState, status: AuthSessionStatus, error?: AuthSessionState["error"]): void {
    if (FINAL_STATUSES.has(session.status)) return;
    session.status = status;
    if (error) session.error = error;
    if (FINAL_STATUSES.has(status)) {
      // Forget it a while after it finished; the owner can still read the outcome until then.
      session.expiresAt = new Date(this.#now().getTime() + FINISHED_RETENTION_MS);
    }
    this.#changes.emit(session.id);
  }

  processing(session: AuthSessionState): void {
    this.#set(session, "processing");
  }

  complete(session: AuthSessionState): void {
    this.#set(session, "completed");
  }

  fail(session: AuthSessionState, error: SvcError): void {
    this.#set(session, "failed", error.toBody());
  }

  cancel(session: AuthSessionState): void {
    this.#set(session, "cancelled", { error: "InputCancelledError", message: "the login was cancelled" });
  }

  /** Resolves when the session's status changes, or after `ms`. */
  async waitForChange(session: AuthSessionState, ms: number): Promise<void> {
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
export function sessionView(session: AuthSessionState, baseUrl: string): AuthSession {
  const open = session.status === "waiting_for_user" || session.status === "pending";
  return {
    session_id: session.id,
    provider: session.provider,
    connection: session.connection,
    flow: session.flow,
    status: session.status,
    ...(open ? { next: { type: "open_url" as const, url: bridgeUrl(session, baseUrl) } } : {}),
    created_at: session.createdAt.toISOString(),
    expires_at: session.expiresAt.toISOString(),
    ...(session.error ? { error: session.error } : {}),
  };
}

/** The browser page of a session: the input form, carrying the session's bridge token. */
export function bridgeUrl(session: AuthSessionState, baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/api/auth/sessions/${session.id}/input?token=${session.bridgeToken}`;
}
