import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createStoreFixture, STORE_KINDS, type StoreFixture } from "../../test/support/stores.ts";
import { InvalidInputError, NotFoundError, VaultUnavailableError } from "../core/errors.ts";
import type { Store } from "../store/store.ts";
import { type MasterKeyResolution, memoryKeyring, noKeyring, resolveMasterKey } from "./master-key.ts";
import { KEY_CHECK_SETTING, VaultService } from "./vault-service.ts";

let fixture: StoreFixture;
let dir: string;

const openStore = (): Promise<Store> => fixture.open();
const closeStores = (): Promise<void> => fixture.closeStores();
/** All stored rows, read through a separate connection. */
const snapshot = (): Promise<string> => fixture.snapshot();

function envKey(value: string): Promise<MasterKeyResolution> {
  return resolveMasterKey({
    env: { SVC_MASTER_KEY: value },
    localKeyPath: join(dir, "unused.key"),
    keyring: noKeyring("x"),
  });
}

const KEY_A = "A".repeat(8) + randomBytes(24).toString("hex");
const KEY_B = "B".repeat(8) + randomBytes(24).toString("hex");

async function service(masterKey: MasterKeyResolution, store?: Store): Promise<VaultService> {
  const db = (store ?? (await openStore())).db;
  const vault = new VaultService({ db, masterKey, now: () => new Date("2030-01-02T03:04:05.000Z") });
  await vault.init();
  return vault;
}

async function expectRejects(
  promise: Promise<unknown>,
  errorClass: abstract new (...args: never[]) => Error,
) {
  await expect(promise).rejects.toBeInstanceOf(errorClass);
}

describe.each(STORE_KINDS)("VaultService on %s", (kind) => {
  beforeEach(async () => {
    fixture = await createStoreFixture(kind);
    dir = fixture.dir;
  });
  afterEach(async () => {
    await fixture.dispose();
  });

  it("stores, reads, lists and deletes JSON values", async () => {
    const vault = await service(await envKey(KEY_A));
    expect(vault.status).toEqual({ locked: false });
    const id = await vault.createVault(null);
    expect(id).toMatch(/^vlt_[A-Za-z0-9_-]{16}$/);
    await vault.put(id, "github/token", { access: "gho_x", n: 1 });
    await vault.put(id, "github/refresh", "r");
    await vault.put(id, "other", [1, null, true]);
    expect(await vault.get(id, "github/token")).toEqual({ access: "gho_x", n: 1 });
    expect(await vault.get(id, "missing")).toBeUndefined();
    expect(await vault.list(id)).toEqual(["github/refresh", "github/token", "other"]);
    expect(await vault.list(id, "github/")).toEqual(["github/refresh", "github/token"]);
    expect(await vault.list(id, "GITHUB/")).toEqual([]);
    expect(await vault.delete(id, "other")).toBe(true);
    expect(await vault.delete(id, "other")).toBe(false);
    expect(await vault.list(id)).toEqual(["github/refresh", "github/token"]);
  });

  it("put is an upsert that increments the revision", async () => {
    const store = await openStore();
    const vault = await service(await envKey(KEY_A), store);
    const id = await vault.createVault(null, "vlt_fixed");
    await vault.put(id, "k", 1);
    await vault.put(id, "k", 2);
    await vault.put(id, "k", "PLAINTEXT-3");
    expect(await vault.get(id, "k")).toBe("PLAINTEXT-3");
    const row = await store.db
      .selectFrom("vault_entries")
      .selectAll()
      .where("key", "=", "k")
      .executeTakeFirstOrThrow();
    expect(row.revision).toBe(3);
    expect(row.updated_at).toBe("2030-01-02T03:04:05.000Z");
    expect(row.value).not.toContain("PLAINTEXT");
    expect(Buffer.from(row.value, "base64").toString("latin1")).not.toContain("PLAINTEXT");
  });

  it("putIfAbsent stores only when the key is absent; of concurrent writers exactly one wins", async () => {
    const vault = await service(await envKey(KEY_A));
    const id = await vault.createVault(null, "vlt_fixed");
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, index) => vault.putIfAbsent(id, "first", { index })),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    const winner = outcomes.indexOf(true);
    expect(await vault.get(id, "first")).toEqual({ index: winner });
    expect(await vault.putIfAbsent(id, "first", "again")).toBe(false);
    expect(await vault.get(id, "first")).toEqual({ index: winner });
  });

  it("createVault is idempotent for a given id and keeps the first key", async () => {
    const store = await openStore();
    const vault = await service(await envKey(KEY_A), store);
    expect(await vault.createVault(null, "vlt_local")).toBe("vlt_local");
    const before = await snapshot();
    expect(await vault.createVault(null, "vlt_local")).toBe("vlt_local");
    expect(await snapshot()).toBe(before);
    await expectRejects(vault.createVault(null, "bad|id"), InvalidInputError);
    await expectRejects(vault.put("vlt_nope", "k", 1), NotFoundError);
    await expectRejects(vault.put("vlt_local", "k", undefined), InvalidInputError);
    await expectRejects(vault.put("vlt_local", "", 1), InvalidInputError);
    const other = new VaultService({ db: store.db, masterKey: await envKey(KEY_A) });
    const [a, b] = await Promise.all([
      other.createVault(null, "vlt_race"),
      vault.createVault(null, "vlt_race"),
    ]);
    expect(a).toBe(b);
    await vault.put("vlt_race", "k", "v");
    expect(await other.get("vlt_race", "k")).toBe("v");
  });

  it("data survives a restart with the same master key", async () => {
    const first = await service(await envKey(KEY_A));
    const id = await first.createVault(null);
    await first.put(id, "k", { v: 1 });
    await closeStores();
    const second = await service(await envKey(KEY_A));
    expect(second.status.locked).toBe(false);
    expect(await second.get(id, "k")).toEqual({ v: 1 });
  });

  it("a flipped byte anywhere in a stored entry gives VaultUnavailableError, never garbage", async () => {
    const store = await openStore();
    const vault = await service(await envKey(KEY_A), store);
    const id = await vault.createVault(null);
    await vault.put(id, "k", { secret: "value" });
    const { value } = await store.db.selectFrom("vault_entries").select("value").executeTakeFirstOrThrow();
    const bytes = Buffer.from(value, "base64");
    for (let i = 0; i < bytes.length; i++) {
      const altered = Buffer.from(bytes);
      altered[i]! ^= 0x04;
      await store.db
        .updateTable("vault_entries")
        .set({ value: altered.toString("base64") })
        .execute();
      await expectRejects(vault.get(id, "k"), VaultUnavailableError);
    }
    await store.db.updateTable("vault_entries").set({ value }).execute();
    expect(await vault.get(id, "k")).toEqual({ secret: "value" });
  });

  it("a flipped byte in a stored vault key gives VaultUnavailableError", async () => {
    const store = await openStore();
    const id = await (await service(await envKey(KEY_A), store)).createVault(null);
    const { wrapped_key } = await store.db
      .selectFrom("vaults")
      .select("wrapped_key")
      .executeTakeFirstOrThrow();
    const bytes = Buffer.from(wrapped_key, "base64");
    for (let i = 0; i < bytes.length; i += 7) {
      const altered = Buffer.from(bytes);
      altered[i]! ^= 0x01;
      await store.db
        .updateTable("vaults")
        .set({ wrapped_key: altered.toString("base64") })
        .execute();
      const fresh = await service(await envKey(KEY_A), store);
      await expectRejects(fresh.get(id, "k"), VaultUnavailableError);
      await expectRejects(fresh.put(id, "k", 1), VaultUnavailableError);
    }
  });

  it("a ciphertext copied to another key or another vault fails to open", async () => {
    const store = await openStore();
    const vault = await service(await envKey(KEY_A), store);
    const one = await vault.createVault(null);
    const two = await vault.createVault(null);
    await vault.put(one, "a", "secret-a");
    await vault.put(one, "b", "secret-b");
    await vault.put(two, "a", "secret-two");
    const sealedA = (
      await store.db
        .selectFrom("vault_entries")
        .select("value")
        .where("vault_id", "=", one)
        .where("key", "=", "a")
        .executeTakeFirstOrThrow()
    ).value;
    await store.db
      .updateTable("vault_entries")
      .set({ value: sealedA })
      .where("vault_id", "=", one)
      .where("key", "=", "b")
      .execute();
    await expectRejects(vault.get(one, "b"), VaultUnavailableError);
    await store.db
      .updateTable("vault_entries")
      .set({ value: sealedA })
      .where("vault_id", "=", two)
      .where("key", "=", "a")
      .execute();
    await expectRejects(vault.get(two, "a"), VaultUnavailableError);
    expect(await vault.get(one, "a")).toBe("secret-a");

    // A vault key copied to another vault does not unwrap either.
    const wrappedOne = (
      await store.db
        .selectFrom("vaults")
        .select("wrapped_key")
        .where("id", "=", one)
        .executeTakeFirstOrThrow()
    ).wrapped_key;
    await store.db.updateTable("vaults").set({ wrapped_key: wrappedOne }).where("id", "=", two).execute();
    const fresh = await service(await envKey(KEY_A), store);
    await expectRejects(fresh.list(two), VaultUnavailableError);
  });

  it("a wrong master key locks the service and modifies nothing", async () => {
    const first = await service(await envKey(KEY_A));
    const id = await first.createVault(null);
    await first.put(id, "k", { token: "t" });
    await closeStores();
    const before = await snapshot();

    const wrong = await service(await envKey(KEY_B));
    expect(wrong.status.locked).toBe(true);
    expect(wrong.status.reason).toMatch(
      /does not open this vault \(was SVC_MASTER_KEY changed\?\); nothing was modified/,
    );
    const attempts = [
      wrong.get(id, "k"),
      wrong.put(id, "k", "overwrite"),
      wrong.put(id, "new", 1),
      wrong.delete(id, "k"),
      wrong.list(id),
      wrong.createVault(null),
      wrong.createVault(null, "vlt_new"),
      wrong.roundTrip(id),
    ];
    for (const attempt of attempts) await expectRejects(attempt, VaultUnavailableError);
    await expect(wrong.get(id, "k")).rejects.toThrow(
      /vault locked: the master key from environment variable/,
    );
    expect(await wrong.checkIntegrity()).toMatchObject({ ok: false });
    await closeStores();
    expect(await snapshot()).toBe(before);

    const right = await service(await envKey(KEY_A));
    expect(await right.get(id, "k")).toEqual({ token: "t" });
  });

  it("a missing master key locks the service and writes nothing, even on an empty store", async () => {
    await openStore();
    await closeStores();
    const before = await snapshot();
    const missing = await envKey("too short");
    const vault = await service(missing);
    expect(vault.status.locked).toBe(true);
    expect(vault.status.reason).toMatch(
      /no master key is available: SVC_MASTER_KEY must be at least 32 characters/,
    );
    await expectRejects(vault.createVault(null), VaultUnavailableError);
    await closeStores();
    expect(await snapshot()).toBe(before);
  });

  it("writes the key check once, and a wrong key cannot replace a missing key check", async () => {
    const store = await openStore();
    const first = await service(await envKey(KEY_A), store);
    const check = await store.db
      .selectFrom("settings")
      .select("value")
      .where("key", "=", KEY_CHECK_SETTING)
      .executeTakeFirstOrThrow();
    await service(await envKey(KEY_A), store);
    const again = await store.db
      .selectFrom("settings")
      .select("value")
      .where("key", "=", KEY_CHECK_SETTING)
      .executeTakeFirstOrThrow();
    expect(again.value).toBe(check.value);

    await first.createVault(null);
    await store.db.deleteFrom("settings").where("key", "=", KEY_CHECK_SETTING).execute();
    const wrong = await service(await envKey(KEY_B), store);
    expect(wrong.status.locked).toBe(true);
    expect(
      await store.db.selectFrom("settings").selectAll().where("key", "=", KEY_CHECK_SETTING).execute(),
    ).toEqual([]);
    const right = await service(await envKey(KEY_A), store);
    expect(right.status.locked).toBe(false);
  });

  it("roundTrip and checkIntegrity pass on a healthy vault; integrity reports tampered records by count", async () => {
    const store = await openStore();
    const vault = await service(await envKey(KEY_A), store);
    const id = await vault.createVault(null);
    await vault.put(id, "a", "SECRET-CONTENT-a");
    await vault.put(id, "b", "SECRET-CONTENT-b");
    await vault.roundTrip(id);
    expect(await vault.list(id)).toEqual(["a", "b"]);
    expect(await vault.checkIntegrity()).toEqual({ ok: true });

    const { value } = await store.db
      .selectFrom("vault_entries")
      .select("value")
      .where("key", "=", "b")
      .executeTakeFirstOrThrow();
    const bytes = Buffer.from(value, "base64");
    bytes[bytes.length - 3]! ^= 0xff;
    await store.db
      .updateTable("vault_entries")
      .set({ value: bytes.toString("base64") })
      .where("key", "=", "b")
      .execute();
    const report = await vault.checkIntegrity();
    expect(report.ok).toBe(false);
    expect(report.issue).toMatch(/1 of 2 vault entries do not open/);
    expect(report.issue).not.toContain("SECRET-CONTENT");

    await store.db.updateTable("vaults").set({ wrapped_key: value }).execute();
    expect((await vault.checkIntegrity()).issue).toMatch(
      /1 of 1 vault keys do not unwrap; 2 of 2 vault entries/,
    );
  });

  it("works with a key file resolved in auto mode", async () => {
    const masterKey = await resolveMasterKey({
      env: {},
      localKeyPath: join(dir, "server", "master.key"),
      keyring: memoryKeyring(),
    });
    const vault = await service(masterKey);
    const id = await vault.createVault(null);
    await vault.roundTrip(id);
  });

  it("never reveals a canary master key in errors, warnings or status", async () => {
    const canary = "CANARY-0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    const master = await envKey(canary);
    const store = await openStore();
    const good = await service(master, store);
    const id = await good.createVault(null);
    await good.put(id, "k", "v");
    const secretForms = [
      canary,
      canary.slice(0, 16),
      master.secret!.toString("base64"),
      master.secret!.toString("hex"),
    ];
    const texts: string[] = [...master.warnings, ...master.issues, master.backend];

    const wrong = await service(await envKey(`${canary}-but-different`), store);
    texts.push(wrong.status.reason ?? "");
    for (const attempt of [wrong.get(id, "k"), wrong.put(id, "k", 1), wrong.createVault(null)]) {
      await attempt.catch((error: Error) => texts.push(error.message, String(error.stack)));
    }
    texts.push((await wrong.checkIntegrity()).issue ?? "");

    const tooShort = await envKey(canary.slice(0, 20));
    texts.push(...tooShort.issues);
    const locked = await service(tooShort, store);
    texts.push(locked.status.reason ?? "");

    await store.db.updateTable("vault_entries").set({ value: "AQ==" }).execute();
    await good.get(id, "k").catch((error: Error) => texts.push(error.message));
    texts.push((await good.checkIntegrity()).issue ?? "");

    expect(texts.length).toBeGreaterThan(8);
    const all = texts.join("\n");
    for (const form of secretForms) expect(all).not.toContain(form);
    expect(all).not.toContain(canary.slice(0, 20));
  });
});
