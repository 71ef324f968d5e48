import type { KeyObject } from "node:crypto";
import type { Kysely } from "kysely";
import { OperationNotAllowedError } from "../../core/errors.ts";
import { publicKeyFromDid } from "../../identity/did-key.ts";
import type { Database } from "../../store/schema.ts";

export interface RegisteredIdentity {
  handle: string;
  did: string;
  publicKey: KeyObject;
  principalId: string | null;
}

/**
 * Registered identities (handle → DID). PoP verification looks one up on every request, so claimed
 * identities are cached: a claim is permanent and a claimed identity is never deleted. An unclaimed
 * one is read from the store each time, since any replica may claim it (or let it expire).
 */
export class IdentityRegistry {
  readonly #db: Kysely<Database>;
  readonly #cache = new Map<string, RegisteredIdentity>();

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async lookup(handle: string): Promise<RegisteredIdentity | undefined> {
    const cached = this.#cache.get(handle);
    if (cached) return cached;
    const row = await this.#db
      .selectFrom("identities")
      .select(["handle", "did", "principal_id"])
      .where("handle", "=", handle)
      .executeTakeFirst();
    if (!row) return undefined;
    const identity = {
      handle: row.handle,
      did: row.did,
      publicKey: publicKeyFromDid(row.did),
      principalId: row.principal_id,
    };
    if (identity.principalId) this.#cache.set(handle, identity);
    return identity;
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
      .values({ handle, did, principal_id: null, created_at: now.toISOString(), claimed_at: null })
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
    await this.#db
      .updateTable("identities")
      .set({ principal_id: principalId, claimed_at: now.toISOString() })
      .where("handle", "=", handle)
      .where("principal_id", "is", null)
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
