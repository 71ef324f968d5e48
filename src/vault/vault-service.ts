import { type KeyObject, randomBytes } from "node:crypto";
import { type CompiledQuery, type Kysely, sql } from "kysely";
import { InvalidInputError, NotFoundError, VaultUnavailableError } from "../core/errors.ts";
import type { Database } from "../store/schema.ts";
import { SettingsRepository } from "../store/settings.ts";
import { deriveKeyEncryptionKey, envelopeKey, KEY_BYTES, open, seal } from "./envelope.ts";
import type { MasterKeyResolution } from "./master-key.ts";

/**
 * The encrypted vault. Envelope encryption: the master secret derives a key-encryption key (KEK);
 * each vault has a random 32-byte data key stored sealed under the KEK (`vaults.wrapped_key`, AAD
 * `svc/vault-key/v1|<vault id>`); each entry is the JSON of its value sealed under the data key
 * (AAD `svc/vault-entry/v1|<vault id>|<key>`), so a ciphertext moved to another record fails.
 *
 * A key check value (`settings["vault.key_check"]`, a constant sealed under the KEK, written once)
 * tells at start whether the master key is the one the vault was created with. Without a master key,
 * or with the wrong one, the service is locked: every operation throws VaultUnavailableError and
 * nothing stored is ever written, overwritten or re-created.
 */

export const KEY_CHECK_SETTING = "vault.key_check";
const KEY_CHECK_AAD = "svc/key-check/v1";
const KEY_CHECK_PLAINTEXT = "svc vault key check v1";
const VAULT_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
const MAX_ENTRY_KEY_LENGTH = 512;
const PROBE_PREFIX = ".svc-probe/";

export interface VaultServiceOptions {
  db: Kysely<Database>;
  masterKey: MasterKeyResolution;
  now?: () => Date;
}

export interface VaultStatus {
  locked: boolean;
  reason?: string;
}

export interface IntegrityReport {
  ok: boolean;
  issue?: string;
}

export function vaultKeyAad(vaultId: string): string {
  return `svc/vault-key/v1|${vaultId}`;
}

export function vaultEntryAad(vaultId: string, key: string): string {
  return `svc/vault-entry/v1|${vaultId}|${key}`;
}

export class VaultService {
  readonly #db: Kysely<Database>;
  readonly #settings: SettingsRepository;
  readonly #masterKey: MasterKeyResolution;
  readonly #now: () => Date;
  /** Keys are held as KeyObjects: imported once rather than on every seal and open. */
  readonly #dataKeys = new Map<string, KeyObject>();
  #kek: KeyObject | undefined;
  /**
   * The entry read every credential resolve makes, compiled once (building a query costs more than
   * running it); its parameters are `[vaultId, key]`, in the order of its where clauses.
   */
  readonly #selectEntry: CompiledQuery<{ value: string }>;
  #status: VaultStatus = { locked: true, reason: "the vault has not been initialised yet" };
  #initialising: Promise<void> | undefined;

  constructor(options: VaultServiceOptions) {
    this.#db = options.db;
    this.#settings = new SettingsRepository(options.db);
    this.#masterKey = options.masterKey;
    this.#now = options.now ?? (() => new Date());
    this.#selectEntry = options.db
      .selectFrom("vault_entries")
      .select("value")
      .where("vault_id", "=", "")
      .where("key", "=", "")
      .compile();
  }

  get status(): VaultStatus {
    return { ...this.#status };
  }

  /**
   * Checks the master key against the stored key check (writing it, insert-if-absent, on a vault
   * that has none yet). Idempotent; every operation runs it first, so calling it is optional but
   * lets a daemon report the status at start. Never throws for a missing or wrong key: it locks.
   * Until it has run, `status` reports locked ("not been initialised yet").
   */
  init(): Promise<void> {
    // A store failure is not memoised: the next call retries.
    this.#initialising ??= this.#init().catch((error: unknown) => {
      this.#initialising = undefined;
      throw error;
    });
    return this.#initialising;
  }

  async #init(): Promise<void> {
    const { secret, issues } = this.#masterKey;
    if (!secret) {
      const detail = issues.length > 0 ? issues.join("; ") : "no master key was resolved";
      this.#lock(`no master key is available: ${detail}; nothing was modified`);
      return;
    }
    const kek = envelopeKey(deriveKeyEncryptionKey(secret));
    let stored = await this.#settings.get(KEY_CHECK_SETTING);
    if (stored === undefined) {
      // A vault without a key check: only write one if the existing vault keys (if any) open
      // under this key, so a wrong key never leaves a key check of its own behind.
      const sample = await this.#db
        .selectFrom("vaults")
        .select(["id", "wrapped_key"])
        .limit(1)
        .executeTakeFirst();
      if (sample && !opens(kek, sample.wrapped_key, vaultKeyAad(sample.id))) {
        this.#lock(this.#wrongKeyMessage());
        return;
      }
      stored = await this.#settings.setIfAbsent(
        KEY_CHECK_SETTING,
        seal(kek, Buffer.from(KEY_CHECK_PLAINTEXT), KEY_CHECK_AAD),
      );
    }
    if (!keyCheckOpens(kek, stored)) {
      this.#lock(this.#wrongKeyMessage());
      return;
    }
    this.#kek = kek;
    this.#status = { locked: false };
  }

  #lock(reason: string): void {
    this.#kek = undefined;
    this.#dataKeys.clear();
    this.#status = { locked: true, reason };
  }

  #wrongKeyMessage(): string {
    const { effectiveSource, backend } = this.#masterKey;
    const hint =
      effectiveSource === "env"
        ? "was SVC_MASTER_KEY changed?"
        : effectiveSource === "keyring"
          ? "was the OS keyring entry replaced, or was the vault created with SVC_MASTER_KEY or a key file?"
          : "was the key file replaced, or was the vault created with SVC_MASTER_KEY or the OS keyring?";
    return `the master key from ${backend} does not open this vault (${hint}); nothing was modified. Restore the original master key to unlock it`;
  }

  async #unlocked(): Promise<KeyObject> {
    await this.init();
    if (!this.#kek)
      throw new VaultUnavailableError(`vault locked: ${this.#status.reason ?? "unknown reason"}`);
    return this.#kek;
  }

  /** Creates a vault (or returns the existing one with that id, which must belong to the same principal). */
  async createVault(principalId: string | null, vaultId?: string): Promise<string> {
    const kek = await this.#unlocked();
    const id = vaultId ?? `vlt_${randomBytes(12).toString("base64url")}`;
    assertVaultId(id);
    let row = await this.#findVault(id);
    if (!row) {
      const dataKey = randomBytes(KEY_BYTES);
      await this.#db
        .insertInto("vaults")
        .values({
          id,
          principal_id: principalId,
          wrapped_key: seal(kek, dataKey, vaultKeyAad(id)),
          created_at: this.#now().toISOString(),
        })
        .onConflict((oc) => oc.column("id").doNothing())
        .execute();
      // Re-read: a concurrent creator may have won, and its key is the one stored.
      row = await this.#findVault(id);
      if (!row) throw new VaultUnavailableError(`vault ${id} could not be created`);
    }
    if (row.principal_id !== principalId) {
      throw new InvalidInputError(`vault ${id} already exists and belongs to another principal`);
    }
    this.#dataKeys.set(id, this.#unwrap(kek, id, row.wrapped_key));
    return id;
  }

  /** Stores a JSON value (insert or replace; the entry's revision is incremented on replace). */
  async put(vaultId: string, key: string, value: unknown): Promise<void> {
    assertEntryKey(key);
    const json = toJson(value);
    const dataKey = await this.#dataKey(vaultId);
    const sealed = seal(dataKey, Buffer.from(json, "utf8"), vaultEntryAad(vaultId, key));
    const updatedAt = this.#now().toISOString();
    await this.#db
      .insertInto("vault_entries")
      .values({ vault_id: vaultId, key, value: sealed, updated_at: updatedAt })
      .onConflict((oc) =>
        oc.columns(["vault_id", "key"]).doUpdateSet((eb) => ({
          value: sealed,
          updated_at: updatedAt,
          revision: eb("vault_entries.revision", "+", 1),
        })),
      )
      .execute();
  }

  /**
   * Stores a JSON value only if the key is absent; returns whether this call stored it. The check
   * and the write are one statement, so of concurrent writers exactly one wins.
   */
  async putIfAbsent(vaultId: string, key: string, value: unknown): Promise<boolean> {
    assertEntryKey(key);
    const json = toJson(value);
    const dataKey = await this.#dataKey(vaultId);
    const sealed = seal(dataKey, Buffer.from(json, "utf8"), vaultEntryAad(vaultId, key));
    const result = await this.#db
      .insertInto("vault_entries")
      .values({ vault_id: vaultId, key, value: sealed, updated_at: this.#now().toISOString() })
      .onConflict((oc) => oc.columns(["vault_id", "key"]).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async get<T = unknown>(vaultId: string, key: string): Promise<T | undefined> {
    assertEntryKey(key);
    const dataKey = await this.#dataKey(vaultId);
    const { rows } = await this.#db.executeQuery<{ value: string }>({
      ...this.#selectEntry,
      parameters: [vaultId, key],
    });
    const row = rows[0];
    if (!row) return undefined;
    const plaintext = openEntry(dataKey, vaultId, key, row.value);
    if (plaintext === undefined) {
      throw new VaultUnavailableError(
        `entry ${JSON.stringify(key)} of vault ${vaultId} cannot be decrypted (the stored record was altered or copied from another record); nothing was modified`,
      );
    }
    return plaintext as T;
  }

  async delete(vaultId: string, key: string): Promise<boolean> {
    assertEntryKey(key);
    await this.#dataKey(vaultId);
    const result = await this.#db
      .deleteFrom("vault_entries")
      .where("vault_id", "=", vaultId)
      .where("key", "=", key)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Entry keys of a vault, sorted by UTF-16 code unit, optionally only those starting with `prefix`. */
  async list(vaultId: string, prefix?: string): Promise<string[]> {
    await this.#dataKey(vaultId);
    // Prefix filtering and ordering happen here, not in SQL: LIKE and collations differ between
    // SQLite and PostgreSQL (case sensitivity, locale order, wildcard escaping).
    const rows = await this.#db
      .selectFrom("vault_entries")
      .select("key")
      .where("vault_id", "=", vaultId)
      .execute();
    const keys = rows.map((row) => row.key);
    const selected = prefix ? keys.filter((key) => key.startsWith(prefix)) : keys;
    return selected.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** How many entries of any vault have a key starting with `prefix` (keys only; nothing is decrypted). */
  async countKeys(prefix: string): Promise<number> {
    await this.#unlocked();
    // substr() rather than LIKE: '_' and '%' are wildcards there, and collations differ.
    const row = await this.#db
      .selectFrom("vault_entries")
      .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
      // Both stores count substr() lengths in code points, not UTF-16 units.
      .where(sql<string>`substr(key, 1, ${[...prefix].length})`, "=", prefix)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Writes, reads back and deletes a random probe entry; throws VaultUnavailableError if anything differs. */
  async roundTrip(vaultId: string): Promise<void> {
    const key = `${PROBE_PREFIX}${randomBytes(9).toString("base64url")}`;
    const value = { probe: randomBytes(16).toString("hex"), at: this.#now().toISOString() };
    try {
      await this.put(vaultId, key, value);
      const back = await this.get<typeof value>(vaultId, key);
      if (!back || back.probe !== value.probe || back.at !== value.at) {
        throw new VaultUnavailableError(`vault ${vaultId} round trip returned a different value`);
      }
    } finally {
      await this.delete(vaultId, key).catch(() => false);
    }
    if ((await this.get(vaultId, key)) !== undefined) {
      throw new VaultUnavailableError(`vault ${vaultId} round trip could not delete its probe entry`);
    }
  }

  /**
   * Verifies everything stored opens under the current master key: the key check, every vault key,
   * and every entry under its own associated data. Reports counts only, never contents.
   */
  async checkIntegrity(): Promise<IntegrityReport> {
    await this.init();
    const kek = this.#kek;
    if (!kek) return { ok: false, issue: `vault locked: ${this.#status.reason ?? "unknown reason"}` };
    const problems: string[] = [];
    const keyCheck = await this.#settings.get(KEY_CHECK_SETTING);
    if (keyCheck === undefined || !keyCheckOpens(kek, keyCheck)) problems.push("the key check does not open");

    const vaults = await this.#db.selectFrom("vaults").select(["id", "wrapped_key"]).execute();
    let badVaultKeys = 0;
    let badEntries = 0;
    let totalEntries = 0;
    for (const vault of vaults) {
      let dataKey: KeyObject | undefined;
      try {
        dataKey = this.#unwrap(kek, vault.id, vault.wrapped_key);
      } catch {
        badVaultKeys++;
      }
      const entries = await this.#db
        .selectFrom("vault_entries")
        .select(["key", "value"])
        .where("vault_id", "=", vault.id)
        .execute();
      totalEntries += entries.length;
      for (const entry of entries) {
        if (!dataKey || openEntry(dataKey, vault.id, entry.key, entry.value) === undefined) badEntries++;
      }
    }
    if (badVaultKeys > 0) problems.push(`${badVaultKeys} of ${vaults.length} vault keys do not unwrap`);
    if (badEntries > 0) problems.push(`${badEntries} of ${totalEntries} vault entries do not open`);
    if (problems.length === 0) return { ok: true };
    return { ok: false, issue: `vault integrity check failed: ${problems.join("; ")}` };
  }

  async #findVault(id: string) {
    return this.#db
      .selectFrom("vaults")
      .select(["id", "principal_id", "wrapped_key"])
      .where("id", "=", id)
      .executeTakeFirst();
  }

  async #dataKey(vaultId: string): Promise<KeyObject> {
    const kek = await this.#unlocked();
    assertVaultId(vaultId);
    const cached = this.#dataKeys.get(vaultId);
    if (cached) return cached;
    const row = await this.#findVault(vaultId);
    if (!row) throw new NotFoundError(`vault ${vaultId} does not exist`);
    const dataKey = this.#unwrap(kek, vaultId, row.wrapped_key);
    this.#dataKeys.set(vaultId, dataKey);
    return dataKey;
  }

  #unwrap(kek: KeyObject, vaultId: string, wrapped: string): KeyObject {
    let dataKey: Buffer | undefined;
    try {
      dataKey = open(kek, wrapped, vaultKeyAad(vaultId));
    } catch {
      dataKey = undefined;
    }
    if (!dataKey || dataKey.length !== KEY_BYTES) {
      throw new VaultUnavailableError(
        `the key of vault ${vaultId} cannot be unwrapped (the stored record was altered or copied from another vault); nothing was modified`,
      );
    }
    return envelopeKey(dataKey);
  }
}

function opens(key: KeyObject, sealed: string, aad: string): boolean {
  try {
    open(key, sealed, aad);
    return true;
  } catch {
    return false;
  }
}

function keyCheckOpens(kek: KeyObject, sealed: string): boolean {
  try {
    return open(kek, sealed, KEY_CHECK_AAD).toString("utf8") === KEY_CHECK_PLAINTEXT;
  } catch {
    return false;
  }
}

/** The decoded JSON value, or undefined when the record does not open or is not JSON. */
function openEntry(dataKey: KeyObject, vaultId: string, key: string, sealed: string): unknown {
  try {
    return JSON.parse(open(dataKey, sealed, vaultEntryAad(vaultId, key)).toString("utf8"));
  } catch {
    return undefined;
  }
}

function toJson(value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    throw new InvalidInputError("vault values must be JSON-serialisable (no cycles, no BigInt)");
  }
  if (json === undefined)
    throw new InvalidInputError("vault values must be JSON values (not undefined or a function)");
  return json;
}

function assertVaultId(id: string): void {
  if (typeof id !== "string" || !VAULT_ID_PATTERN.test(id)) {
    throw new InvalidInputError("a vault id is 1 to 64 characters from A-Z a-z 0-9 _ . : -");
  }
}

function assertEntryKey(key: string): void {
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_ENTRY_KEY_LENGTH) {
    throw new InvalidInputError(`a vault entry key is a string of 1 to ${MAX_ENTRY_KEY_LENGTH} characters`);
  }
  if (key.includes("\u0000")) throw new InvalidInputError("a vault entry key cannot contain NUL characters");
}
