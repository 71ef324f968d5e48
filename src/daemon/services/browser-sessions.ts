import { createHash, randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { equalSecrets } from "../../core/constant-time.ts";
import type { Database } from "../../store/schema.ts";

/** How long a dashboard sign-in lasts; signing out ends it sooner. */
export const BROWSER_SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface BrowserSession {
  /** SHA-256 of the cookie token (the row's key). */
  id: string;
  principalId: string;
  csrfToken: string;
  expiresAt: Date;
  /** How this session appears as the `identity` of audit events: `browser:<8 hex>`. */
  label: string;
}

/** Browser sessions act under `browser:<8 hex>`; identity handles never contain a colon. */
export const BROWSER_HANDLE_PREFIX = "browser:";

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");
/** Derived from the cookie token, so it is never stored, and not derivable from the stored hash. */
const csrfFor = (token: string) => createHash("sha256").update(`svc-csrf|${token}`).digest("base64url");
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * Server-side dashboard sessions in the store, so signing out really ends one and every replica
 * sees the same sessions. The cookie holds a random token; only its hash is stored.
 */
export class BrowserSessionService {
  readonly #db: Kysely<Database>;
  readonly #now: () => Date;

  constructor(db: Kysely<Database>, now: () => Date) {
    this.#db = db;
    this.#now = now;
  }

  /** A new session for `principalId` (a fresh token every time: no fixation). */
  async create(principalId: string): Promise<{ token: string; session: BrowserSession }> {
    const now = this.#now();
    const token = randomBytes(32).toString("base64url");
    const row = {
      id: hashToken(token),
      principal_id: principalId,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + BROWSER_SESSION_TTL_MS).toISOString(),
    };
    await this.#db.deleteFrom("browser_sessions").where("expires_at", "<=", now.toISOString()).execute();
    await this.#db.insertInto("browser_sessions").values(row).execute();
    return { token, session: toSession(row, token) };
  }

  /** The live session a cookie token names; unknown, malformed and expired tokens find none. */
  async find(token: string): Promise<BrowserSession | undefined> {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const row = await this.#db
      .selectFrom("browser_sessions")
      .selectAll()
      .where("id", "=", hashToken(token))
      .executeTakeFirst();
    if (!row || row.expires_at <= this.#now().toISOString()) return undefined;
    return toSession(row, token);
  }

  async end(token: string): Promise<void> {
    await this.#db.deleteFrom("browser_sessions").where("id", "=", hashToken(token)).execute();
  }
}

export function csrfMatches(session: BrowserSession, given: unknown): boolean {
  return typeof given === "string" && equalSecrets(session.csrfToken, given);
}

function toSession(row: Database["browser_sessions"], token: string): BrowserSession {
  return {
    id: row.id,
    principalId: row.principal_id,
    csrfToken: csrfFor(token),
    expiresAt: new Date(row.expires_at),
    label: `${BROWSER_HANDLE_PREFIX}${row.id.slice(0, 8)}`,
  };
}
