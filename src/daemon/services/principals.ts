import type { Kysely } from "kysely";
import { InvalidInputError } from "../../core/errors.ts";
import { newId } from "../../core/ids.ts";
import type { Database } from "../../store/schema.ts";
import { SettingsRepository } from "../../store/settings.ts";
import type { VaultService } from "../../vault/vault-service.ts";

export type PrincipalRole = "admin" | "user";

export interface Principal {
  id: string;
  role: PrincipalRole;
  vaultId: string | null;
  /** Set for accounts that sign in to the dashboard with a password. */
  email: string | null;
}

/** How a principal appears in API records (whoami, identity registration). */
export function principalFields(principal: Principal | undefined) {
  return {
    principal_id: principal?.id,
    principal_role: principal?.role,
    vault_id: principal?.vaultId ?? undefined,
  };
}

const LOCAL_OWNER_KEY = "principals.local_owner";
/** A settings row whose lock serialises principal creation (its value means nothing). */
const PRINCIPALS_LOCK_KEY = "principals.create_lock";

/** Principals own vaults; the first principal of a fresh daemon is `admin`, later ones `user`. */
export class PrincipalService {
  readonly #db: Kysely<Database>;
  readonly #settings: SettingsRepository;
  readonly #vault: VaultService;
  readonly #cache = new Map<string, Principal>();

  constructor(db: Kysely<Database>, vault: VaultService) {
    this.#db = db;
    this.#settings = new SettingsRepository(db);
    this.#vault = vault;
  }

  async get(id: string): Promise<Principal | undefined> {
    const cached = this.#cache.get(id);
    if (cached) return cached;
    const row = await this.#db
      .selectFrom("principals")
      .select(["id", "role", "email"])
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) return undefined;
    const vault = await this.#db
      .selectFrom("vaults")
      .select("id")
      .where("principal_id", "=", id)
      .executeTakeFirst();
    const principal = { id: row.id, role: row.role, vaultId: vault?.id ?? null, email: row.email };
    if (principal.vaultId) this.#cache.set(id, principal);
    return principal;
  }

  /** The account signing in with `email`, and its password hash. */
  async findAccount(email: string): Promise<{ principal: Principal; passwordHash: string } | undefined> {
    const row = await this.#db
      .selectFrom("principals")
      .select(["id", "password_hash"])
      .where("email", "=", email)
      .executeTakeFirst();
    const principal = row?.password_hash ? await this.get(row.id) : undefined;
    return principal ? { principal, passwordHash: row!.password_hash! } : undefined;
  }

  /**
   * Creates a principal with its vault; `admin` when it is the very first principal. An account
   * has an email and password hash; the local owner has neither. Refused when the email is taken.
   */
  async create(now: Date, account?: { email: string; passwordHash: string }): Promise<Principal> {
    const principal = await this.#insert(now, account);
    if (!principal) throw new InvalidInputError("an account with this email exists; sign in instead");
    return principal;
  }

  /** Creates an account; undefined (nothing created) when the email is taken. */
  createAccount(now: Date, account: { email: string; passwordHash: string }): Promise<Principal | undefined> {
    return this.#insert(now, account);
  }

  async #insert(
    now: Date,
    account?: { email: string; passwordHash: string },
  ): Promise<Principal | undefined> {
    const id = newId("prn");
    const created = await this.#db.transaction().execute(async (trx) => {
      // Serialises creations across connections and replicas: on PostgreSQL two transactions
      // could otherwise both count zero principals (two admins) or both find an email free.
      // The upsert holds the row lock until commit; later statements then see committed rows.
      await trx
        .insertInto("settings")
        .values({ key: PRINCIPALS_LOCK_KEY, value: "" })
        .onConflict((oc) => oc.column("key").doUpdateSet({ value: "" }))
        .execute();
      const count = await trx
        .selectFrom("principals")
        .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
        .executeTakeFirstOrThrow();
      const role: PrincipalRole = Number(count.n) === 0 ? "admin" : "user";
      if (account) {
        const taken = await trx
          .selectFrom("principals")
          .select("id")
          .where("email", "=", account.email)
          .executeTakeFirst();
        if (taken) return false;
      }
      await trx
        .insertInto("principals")
        .values({
          id,
          role,
          email: account?.email ?? null,
          password_hash: account?.passwordHash ?? null,
          created_at: now.toISOString(),
        })
        .execute();
      return true;
    });
    if (!created) return undefined;
    await this.#vault.createVault(id);
    return (await this.get(id))!;
  }

  /**
   * The principal who owns this daemon's machine account: whoever can read the bootstrap secret.
   * Created on the first local claim; concurrent first claims agree on one owner.
   */
  async localOwner(now: Date): Promise<Principal> {
    const existing = await this.#settings.get(LOCAL_OWNER_KEY);
    if (existing) {
      const principal = await this.get(existing);
      if (principal) return principal;
    }
    const candidate = await this.create(now);
    const winner = await this.#settings.setIfAbsent(LOCAL_OWNER_KEY, candidate.id);
    return (await this.get(winner)) ?? candidate;
  }
}
