import type { Kysely } from "kysely";
import type { Database } from "./schema.ts";

/** Small key/value settings kept in the store (spec version, local owner, ...). */
export class SettingsRepository {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  async get(key: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom("settings")
      .select("value")
      .where("key", "=", key)
      .executeTakeFirst();
    return row?.value;
  }

  /** Sets the value only if the key is absent; returns the value that is stored afterwards. */
  async setIfAbsent(key: string, value: string): Promise<string> {
    await this.#db
      .insertInto("settings")
      .values({ key, value })
      .onConflict((oc) => oc.column("key").doNothing())
      .execute();
    return (await this.get(key)) ?? value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.#db
      .insertInto("settings")
      .values({ key, value })
      .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
      .execute();
  }
}
