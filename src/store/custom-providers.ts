import type { Kysely } from "kysely";
import type { Database } from "./schema.ts";

export interface CustomProviderRow {
  name: string;
  /** The definition JSON as registered. */
  definition: string;
  created_at: string;
  updated_at: string;
}

/** Custom provider definitions, stored as registered (the daemon validates them on the way in and out). */
export class CustomProviderRepository {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  list(): Promise<CustomProviderRow[]> {
    return this.#db.selectFrom("custom_providers").selectAll().orderBy("name").execute();
  }

  /** Inserts or replaces; returns true when the name was new. */
  async upsert(name: string, definition: string, now: Date): Promise<boolean> {
    const at = now.toISOString();
    const inserted = await this.#db
      .insertInto("custom_providers")
      .values({ name, definition, created_at: at, updated_at: at })
      .onConflict((oc) => oc.column("name").doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return true;
    await this.#db
      .updateTable("custom_providers")
      .set({ definition, updated_at: at })
      .where("name", "=", name)
      .execute();
    return false;
  }

  /** Inserts only when absent; returns whether this call stored it. */
  async insertIfAbsent(name: string, definition: string, now: Date): Promise<boolean> {
    const at = now.toISOString();
    const result = await this.#db
      .insertInto("custom_providers")
      .values({ name, definition, created_at: at, updated_at: at })
      .onConflict((oc) => oc.column("name").doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async delete(name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom("custom_providers").where("name", "=", name).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
