import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createStoreFixture, STORE_KINDS, type StoreFixture } from "../../../test/support/stores.ts";
import { InvalidInputError } from "../../core/errors.ts";
import type { Store } from "../../store/store.ts";
import { noKeyring, resolveMasterKey } from "../../vault/master-key.ts";
import { VaultService } from "../../vault/vault-service.ts";
import { PrincipalService } from "./principals.ts";

describe.each(STORE_KINDS)("PrincipalService on %s", (kind) => {
  let fixture: StoreFixture;
  let store: Store;

  beforeEach(async () => {
    fixture = await createStoreFixture(kind);
    store = await fixture.open();
  });
  afterEach(async () => {
    await fixture.dispose();
  });

  /** A service as one daemon replica has it: its own vault service and caches over the shared store. */
  async function replica(): Promise<PrincipalService> {
    const masterKey = await resolveMasterKey({
      env: { SVC_MASTER_KEY: "k".repeat(40) },
      localKeyPath: join(fixture.dir, "unused.key"),
      keyring: noKeyring("none"),
    });
    const db = kind === "sqlite" ? store.db : (await fixture.open()).db;
    return new PrincipalService(db, new VaultService({ db, masterKey }));
  }

  it("of principals created at once, exactly one is the admin", async () => {
    const services = await Promise.all([replica(), replica(), replica()]);
    const created = await Promise.all(
      Array.from({ length: 9 }, (_, index) => services[index % 3]!.create(new Date())),
    );
    expect(created.filter((principal) => principal.role === "admin")).toHaveLength(1);
    expect(new Set(created.map((principal) => principal.vaultId)).size).toBe(9);
  });

  it("of accounts registered at once with one email, one is created and the others are told it exists", async () => {
    const services = await Promise.all([replica(), replica(), replica()]);
    const account = { email: "same@example.com", passwordHash: "scrypt$..." };
    const outcomes = await Promise.allSettled(services.map((service) => service.create(new Date(), account)));
    expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
    for (const outcome of outcomes.filter((o) => o.status === "rejected")) {
      expect(outcome.reason).toBeInstanceOf(InvalidInputError);
    }
    expect((await services[0]!.findAccount(account.email))?.principal.role).toBe("admin");
  });
});
