import type { KeyObject } from "node:crypto";
import type { Kysely } from "kysely";
import type { AgentScope } from "../../api/agents.ts";
import { AuthenticationFailedError, OperationNotAllowedError } from "../../core/errors.ts";
import { publicKeyFromDid } from "../../identity/did-key.ts";
import type { Database } from "../../store/schema.ts";

export interface RegisteredIdentity {
  handle: string;
  did: string;
  publicKey: KeyObject;
  principalId: string | null;
  createdAt: string;
  claimedAt: string | null;
  /** What it may use; null: every connection of its principal. */
  scope: AgentScope;
  revokedAt: string | null;
  revokedBy: string | null;
}

type IdentityRow = Database["identities"];

function fromRow(row: IdentityRow): RegisteredIdentity {
  return {
    handle: row.handle,
    did: row.did,
    publicKey: publicKeyFromDid(row.did),
    principalId: row.principal_id,
    createdAt: row.created_at,
    claimedAt: row.claimed_at,
    scope: row.scope === null ? null : (JSON.parse(row.scope) as string[]),
    revokedAt: row.revoked_at,
    revokedBy: row.revoked_by,
  };
}

export interface IdentityRegistryOptions {
  /**
   * Keep claimed identities in memory. Only a daemon that is the store's one writer may: with
   * replicas, a scope change or revocation on one must hold on the next request to any other,
   * so each request reads the row (one primary-key lookup).
   */
  cache: boolean;
}

/**
 * Registered identities (handle → DID, scope, revocation). PoP verification looks one up on every
 * request. A single daemon caches claimed identities and drops an entry when it changes one; an
 * unclaimed one is read from the store each time, since any replica may claim it.
 */
export class IdentityRegistry {
  readonly #db: Kysely<Database>;
  readonly #cache = new Map<string, RegisteredIdentity>();
  readonly #caching: boolean;

  constructor(db: Kysely<Database>, options: IdentityRegistryOptions = { cache: true }) {
    this.#db = db;
    this.#caching = options.cache;
  }

  /** The identity a PoP token names; a revoked one authenticates nothing any more. */
  async lookup(handle: string): Promise<RegisteredIdentity | undefined> {
    const identity = await this.find(handle);
    if (identity?.revokedAt) {
      throw new AuthenticationFailedError(
        `the identity "${handle}" was revoked at ${identity.revokedAt} by ${identity.revokedBy ?? "its principal"}; create a new one with \`svc agent create\``,
      );
    }
    return identity;
  }

  /** The identity, revoked or not. */
  async find(handle: string): Promise<RegisteredIdentity | undefined> {
    const cached = this.#cache.get(handle);
    if (cached) return cached;
    const row = await this.#db
      .selectFrom("identities")
      .selectAll()
      .where("handle", "=", handle)
      .executeTakeFirst();
    if (!row) return undefined;
    const identity = fromRow(row);
    if (identity.principalId && this.#caching) this.#cache.set(handle, identity);
    return identity;
  }

  /** Every identity of a principal, or of every principal (admins), oldest first. */
  async list(principalId: string | null): Promise<RegisteredIdentity[]> {
    let query = this.#db.selectFrom("identities").selectAll().orderBy("created_at").orderBy("handle");
    if (principalId !== null) query = query.where("principal_id", "=", principalId);
    return (await query.execute()).map(fromRow);
  }

  /** Replaces an identity's scope (null: unrestricted). */
  async setScope(handle: string, scope: AgentScope): Promise<RegisteredIdentity> {
    await this.#db
      .updateTable("identities")
      .set({ scope: scope === null ? null : JSON.stringify(scope) })
      .where("handle", "=", handle)
      .execute();
    this.#cache.delete(handle);
    return (await this.find(handle))!;
  }

  /** Revokes an identity for good; its next request, on any daemon sharing the store, is refused. */
  async revoke(handle: string, by: string, now: Date): Promise<RegisteredIdentity> {
    await this.#db
      .updateTable("identities")
      .set({ revoked_at: now.toISOString(), revoked_by: by })
      .where("handle", "=", handle)
      .where("revoked_at", "is", null)
      .execute();
    this.#cache.delete(handle);
    return (await this.find(handle))!;
  }

  /** Registers `handle` for `did`; idempotent for the same pair, refused when either is taken. */
  async register(handle: string, did: string, now: Date): Promise<RegisteredIdentity> {
    const existing = await this.lookup(handle);
    if (existing) {
      if (existing.did === did) return existing;
      throw new OperationNotAllowedError(`the handle "${handle}" is already registered to another key`);
    }
    const byDid = await this.#db
      .selectFrom("identities")
      .select("handle")
      .where("did", "=", did)
      .executeTakeFirst();
    if (byDid) {
      throw new OperationNotAllowedError(`this key is already registered under the handle "${byDid.handle}"`);
    }
    await this.#db
      .insertInto("identities")
      .values({
        handle,
        did,
        principal_id: null,
        created_at: now.toISOString(),
        claimed_at: null,
        scope: null,
        revoked_at: null,
        revoked_by: null,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const stored = await this.lookup(handle);
    if (!stored || stored.did !== did) {
      throw new OperationNotAllowedError(`the handle "${handle}" is already registered to another key`);
    }
    return stored;
  }

  /**
   * Makes room for one more unclaimed identity under `max`: unclaimed identities registered more
   * than `expireAfterMs` ago (their claim window is over) are deleted, oldest first, as many as
   * needed. Resolves 0 when there is room, else the seconds until the oldest unclaimed one expires.
   * Two registrations at the same moment may both pass: the cap bounds the store, not exactly.
   */
  async makeRoomForUnclaimed(now: Date, max: number, expireAfterMs: number): Promise<number> {
    const unclaimed = () => this.#db.selectFrom("identities").where("principal_id", "is", null);
    const { n } = await unclaimed()
      .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
      .executeTakeFirstOrThrow();
    const excess = Number(n) - max + 1;
    if (excess <= 0) return 0;
    const expired = await unclaimed()
      .select("handle")
      .where("created_at", "<", new Date(now.getTime() - expireAfterMs).toISOString())
      .orderBy("created_at")
      .limit(excess)
      .execute();
    if (expired.length > 0) {
      await this.#db
        .deleteFrom("identities")
        .where("principal_id", "is", null)
        .where(
          "handle",
          "in",
          expired.map((row) => row.handle),
        )
        .execute();
    }
    if (expired.length >= excess) return 0;
    const oldest = await unclaimed().select("created_at").orderBy("created_at").limit(1).executeTakeFirst();
    const expiresAt = oldest ? Date.parse(oldest.created_at) + expireAfterMs : now.getTime();
    return Math.max(1, Math.ceil((expiresAt - now.getTime()) / 1000));
  }

  /** Attaches an unclaimed identity to a principal; an identity claimed by someone else stays theirs. */
  async claim(handle: string, principalId: string, now: Date): Promise<RegisteredIdentity> {
    if ((await this.find(handle))?.revokedAt) {
      throw new OperationNotAllowedError(
        `the identity "${handle}" was revoked; its claim links no longer work`,
      );
    }
    await this.#db
      .updateTable("identities")
      .set({ principal_id: principalId, claimed_at: now.toISOString() })
      .where("handle", "=", handle)
      .where("principal_id", "is", null)
      .where("revoked_at", "is", null)
      .execute();
    this.#cache.delete(handle);
    const identity = await this.lookup(handle);
    if (!identity) throw new OperationNotAllowedError(`the identity "${handle}" is not registered`);
    if (identity.principalId !== principalId) {
      throw new OperationNotAllowedError(`the identity "${handle}" is already claimed by another principal`);
    }
    return identity;
  }
}
