import { chmodSync, closeSync, openSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { Kysely, SqliteDialect, sql } from "kysely";
import type { HomeLayout } from "../core/paths.ts";
import { ensurePrivateDir } from "../core/secure-fs.ts";
import { migrateToLatest } from "./migrations.ts";
import type { Database } from "./schema.ts";
import { withStatementCache } from "./statement-cache.ts";

export interface Store {
  readonly db: Kysely<Database>;
  readonly kind: "sqlite" | "postgres";
  /** Human-readable location, never a password-bearing URL. */
  readonly description: string;
  /** A cheap round trip proving the store answers. */
  probe(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The daemon's store: PostgreSQL when `SVC_DATABASE_URL` is set (hosted, shared by replicas),
 * otherwise the embedded SQLite file in the home. The PostgreSQL driver loads only when used.
 */
export async function openStore(
  env: { SVC_DATABASE_URL?: string | undefined },
  layout: Pick<HomeLayout, "database">,
): Promise<Store> {
  const url = env.SVC_DATABASE_URL?.trim();
  if (!url) return openSqliteStore({ path: layout.database });
  const { openPostgresStore } = await import("./postgres.ts");
  return openPostgresStore({ url });
}

/** The Store around an open, migrated database: a `select 1` probe and an idempotent close. */
export function storeOver(db: Kysely<Database>, kind: Store["kind"], description: string): Store {
  let closed = false;
  return {
    db,
    kind,
    description,
    async probe() {
      await sql`select 1`.execute(db);
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}

export interface SqliteStoreOptions {
  path: string;
}

/** Opens (creating if needed) the embedded SQLite store in WAL mode and applies migrations. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<Store> {
  ensurePrivateDir(dirname(options.path));
  // Created 0600 before SQLite opens it; SQLite gives its -wal and -shm files the same mode.
  closeSync(openSync(options.path, "a", 0o600));
  chmodSync(options.path, 0o600);
  const connection = new BetterSqlite3(options.path);
  connection.pragma("journal_mode = WAL");
  connection.pragma("busy_timeout = 5000");
  connection.pragma("foreign_keys = ON");
  connection.pragma("synchronous = NORMAL");
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(connection) }),
  });
  await migrateToLatest(db as Kysely<unknown>);
  return storeOver(db, "sqlite", `SQLite ${options.path}`);
}
