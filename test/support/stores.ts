/**
 * A fresh store of each kind for contract tests that must hold on SQLite and PostgreSQL alike.
 *
 * SQLite: a file in a new temporary directory. PostgreSQL: a new schema in the machine's test
 * database (`SVC_TEST_DATABASE_URL`, default postgres://postgres@127.0.0.1:5432/test), selected
 * through the URL's `options=-c search_path=...`, and dropped afterwards. PostgreSQL suites fail,
 * never skip, when the server cannot be reached: CI runs it (.ci/run starts it).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openPostgresStore } from "../../src/store/postgres.ts";
import { openSqliteStore, type Store } from "../../src/store/store.ts";

export type StoreKind = Store["kind"];
export const STORE_KINDS: readonly StoreKind[] = ["sqlite", "postgres"];

export const TEST_DATABASE_URL =
  process.env.SVC_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The stored tables, for snapshots (the migration tables are left out). */
const TABLES = [
  "settings",
  "principals",
  "identities",
  "vaults",
  "vault_entries",
  "custom_providers",
  "audit_events",
  "browser_sessions",
] as const;

export interface StoreFixture {
  kind: StoreKind;
  /** A directory for files beside the store (logs, key files); the SQLite file lives in it. */
  dir: string;
  /** The daemon environment that selects this store (empty for SQLite: the home's file). */
  env: NodeJS.ProcessEnv;
  /** PostgreSQL: this fixture's URL (with its search_path); SQLite: undefined. */
  url: string | undefined;
  /** Opens (and migrates) the store; every call opens the same data. Closed by `closeStores`. */
  open(): Promise<Store>;
  /** Closes every store `open` returned. */
  closeStores(): Promise<void>;
  /** Every row of every table, read through a new connection, in a stable order. */
  snapshot(): Promise<string>;
  /** Closes the stores and deletes the data (the directory, the schema). */
  dispose(): Promise<void>;
}

/** A URL naming `schema` through `options=-c search_path=<schema>` (replacing any given options). */
export function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set("options", `-c search_path=${schema}`);
  return parsed.toString();
}

export async function createStoreFixture(kind: StoreKind): Promise<StoreFixture> {
  const dir = mkdtempSync(join(tmpdir(), `svc-store-${kind}-`));
  const opened: Store[] = [];
  const track = async (store: Promise<Store>) => {
    const ready = await store;
    opened.push(ready);
    return ready;
  };
  const closeStores = async () => {
    for (const store of opened.splice(0)) await store.close();
  };

  /** The fixture over `openStore`: snapshots read through a new store, dispose drops the data. */
  const fixture = (
    env: NodeJS.ProcessEnv,
    url: string | undefined,
    openStore: () => Promise<Store>,
    dropData: () => Promise<void> = async () => {},
  ): StoreFixture => ({
    kind,
    dir,
    env,
    url,
    open: () => track(openStore()),
    closeStores,
    snapshot: async () => {
      const store = await openStore();
      try {
        return await snapshotOf(store);
      } finally {
        await store.close();
      }
    },
    async dispose() {
      await closeStores();
      rmSync(dir, { recursive: true, force: true });
      await dropData();
    },
  });

  if (kind === "sqlite") {
    const path = join(dir, "server", "svc.db");
    return fixture({}, undefined, () => openSqliteStore({ path }));
  }
  const schema = `svc_test_${randomBytes(6).toString("hex")}`;
  await adminQuery(`create schema ${schema}`);
  const url = withSearchPath(TEST_DATABASE_URL, schema);
  return fixture(
    { SVC_DATABASE_URL: url },
    url,
    () => openPostgresStore({ url }),
    async () => {
      await adminQuery(`drop schema if exists ${schema} cascade`);
    },
  );
}

/** Runs one statement on the test database, failing with a message that says what is missing. */
export async function adminQuery(statement: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw new Error(
      `PostgreSQL is not reachable at ${new URL(TEST_DATABASE_URL).host} (${(error as Error).message}). ` +
        "The PostgreSQL store tests need it: start it (bash .ci/run does, or pg_ctlcluster 15 main start) " +
        "or point SVC_TEST_DATABASE_URL at one.",
    );
  }
  try {
    return await client.query(statement);
  } finally {
    await client.end();
  }
}

async function snapshotOf(store: Store): Promise<string> {
  const tables: Record<string, unknown[]> = {};
  for (const table of TABLES) {
    const rows = await store.db.selectFrom(table).selectAll().execute();
    // Sorted here, not in SQL, so both stores order rows the same way.
    tables[table] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return JSON.stringify(tables);
}
