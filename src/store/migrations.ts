import { type Kysely, type Migration, type MigrationProvider, Migrator, PostgresAdapter, sql } from "kysely";

/**
 * Versioned migrations, in code, applied at start. Only Kysely's schema builder and portable SQL:
 * the same list runs on SQLite and PostgreSQL. Never edit a shipped migration; add the next one.
 */
const MIGRATIONS: Record<string, Migration> = {
  "0001_foundation": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable("settings")
        .addColumn("key", "varchar(128)", (c) => c.primaryKey())
        .addColumn("value", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("principals")
        .addColumn("id", "varchar(64)", (c) => c.primaryKey())
        .addColumn("role", "varchar(16)", (c) => c.notNull())
        .addColumn("email", "varchar(320)", (c) => c.unique())
        .addColumn("password_hash", "text")
        .addColumn("created_at", "varchar(32)", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("identities")
        .addColumn("handle", "varchar(64)", (c) => c.primaryKey())
        .addColumn("did", "varchar(128)", (c) => c.notNull().unique())
        .addColumn("principal_id", "varchar(64)", (c) => c.references("principals.id"))
        .addColumn("created_at", "varchar(32)", (c) => c.notNull())
        .addColumn("claimed_at", "varchar(32)")
        .execute();
      await db.schema
        .createTable("vaults")
        .addColumn("id", "varchar(64)", (c) => c.primaryKey())
        .addColumn("principal_id", "varchar(64)", (c) => c.references("principals.id"))
        .addColumn("wrapped_key", "text", (c) => c.notNull())
        .addColumn("created_at", "varchar(32)", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("vault_entries")
        .addColumn("vault_id", "varchar(64)", (c) => c.notNull().references("vaults.id"))
        .addColumn("key", "varchar(512)", (c) => c.notNull())
        .addColumn("value", "text", (c) => c.notNull())
        .addColumn("updated_at", "varchar(32)", (c) => c.notNull())
        .addColumn("revision", "integer", (c) => c.notNull().defaultTo(sql`1`))
        .addPrimaryKeyConstraint("vault_entries_pk", ["vault_id", "key"])
        .execute();
      await db.schema
        .createIndex("identities_principal_idx")
        .on("identities")
        .column("principal_id")
        .execute();
    },
  },
  "0002_providers_audit": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable("custom_providers")
        .addColumn("name", "varchar(64)", (c) => c.primaryKey())
        .addColumn("definition", "text", (c) => c.notNull())
        .addColumn("created_at", "varchar(32)", (c) => c.notNull())
        .addColumn("updated_at", "varchar(32)", (c) => c.notNull())
        .execute();
      await db.schema
        .createTable("audit_events")
        .addColumn("id", "varchar(40)", (c) => c.primaryKey())
        .addColumn("timestamp", "varchar(32)", (c) => c.notNull())
        .addColumn("event", "varchar(64)", (c) => c.notNull())
        .addColumn("source", "varchar(16)", (c) => c.notNull())
        .addColumn("status", "varchar(32)", (c) => c.notNull())
        .addColumn("provider", "varchar(64)")
        .addColumn("connection", "varchar(64)")
        .addColumn("identity", "varchar(64)")
        .addColumn("principal_id", "varchar(64)")
        .addColumn("detail", "text")
        .execute();
      await db.schema
        .createIndex("audit_events_time_idx")
        .on("audit_events")
        .columns(["timestamp", "id"])
        .execute();
      await db.schema
        .createIndex("audit_events_principal_idx")
        .on("audit_events")
        .columns(["principal_id", "timestamp", "id"])
        .execute();
    },
  },
  "0003_browser_sessions": {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable("browser_sessions")
        .addColumn("id", "varchar(64)", (c) => c.primaryKey())
        .addColumn("principal_id", "varchar(64)", (c) => c.notNull().references("principals.id"))
        .addColumn("created_at", "varchar(32)", (c) => c.notNull())
        .addColumn("expires_at", "varchar(32)", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("browser_sessions_expiry_idx")
        .on("browser_sessions")
        .column("expires_at")
        .execute();
    },
  },
  "0004_postgres_byte_order": {
    // SQLite compares text byte by byte; PostgreSQL uses the database's collation, where
    // en_US.UTF-8 sorts 'a' before 'B' and skips punctuation. Columns that are ordered or
    // compared by range get the "C" collation, so audit paging, expiry and listings agree on
    // both stores. Nothing to do on SQLite.
    async up(db: Kysely<unknown>) {
      if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
      const columns = [
        ["audit_events", "timestamp", "varchar(32)"],
        ["audit_events", "id", "varchar(40)"],
        ["browser_sessions", "expires_at", "varchar(32)"],
        ["custom_providers", "name", "varchar(64)"],
      ] as const;
      for (const [table, column, type] of columns) {
        await sql`alter table ${sql.table(table)} alter column ${sql.ref(column)} type ${sql.raw(type)} collate "C"`.execute(
          db,
        );
      }
    },
  },
  "0005_agent_scopes": {
    // An identity's scope (JSON list of `provider` / `provider:connection`; null: unrestricted)
    // and its revocation. One column per statement: SQLite's ALTER TABLE adds one at a time.
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable("identities").addColumn("scope", "text").execute();
      await db.schema.alterTable("identities").addColumn("revoked_at", "varchar(32)").execute();
      await db.schema.alterTable("identities").addColumn("revoked_by", "varchar(64)").execute();
    },
  },
  "0006_audit_identity_activity": {
    // Per-agent activity (requests per provider and outcome since a time) is read from this
    // index alone: it covers every column the query touches.
    async up(db: Kysely<unknown>) {
      await db.schema
        .createIndex("audit_events_identity_idx")
        .on("audit_events")
        .columns(["identity", "timestamp", "source", "provider", "status"])
        .execute();
    },
  },
};

class InCodeMigrations implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return MIGRATIONS;
  }
}

export interface MigrateOptions {
  /** Where Kysely keeps its migration tables (PostgreSQL: the store's schema). */
  migrationTableSchema?: string;
}

/**
 * Applies every pending migration; returns the names this call applied. Kysely's migrator takes
 * a lock (on PostgreSQL an advisory lock), so concurrent starts apply each migration once.
 */
export async function migrateToLatest(db: Kysely<unknown>, options: MigrateOptions = {}): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new InCodeMigrations(), ...options });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

export const LATEST_MIGRATION = Object.keys(MIGRATIONS).at(-1)!;
