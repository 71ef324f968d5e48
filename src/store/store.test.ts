import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  adminQuery,
  createStoreFixture,
  STORE_KINDS,
  type StoreFixture,
  TEST_DATABASE_URL,
  withSearchPath,
} from "../../test/support/stores.ts";
import { InvalidInputError, UnexpectedError } from "../core/errors.ts";
import { CustomProviderRepository } from "./custom-providers.ts";
import { LATEST_MIGRATION, migrateToLatest } from "./migrations.ts";
import { describePostgresUrl, openPostgresStore } from "./postgres.ts";
import { SettingsRepository } from "./settings.ts";
import { openStore, type Store } from "./store.ts";

/** Strings whose byte order differs from a natural-language collation's (case, punctuation). */
const MIXED = ["b", "B", "a-c", "ac", "A", "_z", "a_b", "Z9", "z"];
const byteOrder = (values: readonly string[]) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

describe.each(STORE_KINDS)("store contract on %s", (kind) => {
  let fixture: StoreFixture;
  let store: Store;

  beforeEach(async () => {
    fixture = await createStoreFixture(kind);
    store = await fixture.open();
  });
  afterEach(async () => {
    await fixture.dispose();
  });

  it("opens migrated, answers a probe, and says what it is", async () => {
    expect(store.kind).toBe(kind);
    expect(store.description).toMatch(
      kind === "sqlite" ? /^SQLite .*svc\.db$/ : /^PostgreSQL 127\.0\.0\.1:5432\//,
    );
    await store.probe();
    const applied = await store.db
      .selectFrom("kysely_migration" as never)
      .select(sql<string>`name`.as("name"))
      .execute();
    expect(applied.map((row) => row.name).at(-1)).toBe(LATEST_MIGRATION);
  });

  it("reopens on the same data without migrating again", async () => {
    await new SettingsRepository(store.db).set("k", "v");
    await fixture.closeStores();
    const again = await fixture.open();
    expect(await new SettingsRepository(again.db).get("k")).toBe("v");
    expect(await migrateToLatest(again.db as Kysely<unknown>, migrationOptions(again))).toEqual([]);
  });

  it("close is idempotent and a closed store refuses queries", async () => {
    await store.close();
    await store.close();
    await expect(store.probe()).rejects.toThrow();
  });

  it("settings: set replaces, setIfAbsent keeps the first value, concurrent setIfAbsent agree", async () => {
    const settings = new SettingsRepository(store.db);
    expect(await settings.get("missing")).toBeUndefined();
    await settings.set("a", "1");
    await settings.set("a", "2");
    expect(await settings.get("a")).toBe("2");
    expect(await settings.setIfAbsent("a", "3")).toBe("2");
    const winners = await Promise.all(
      Array.from({ length: 10 }, (_, index) => settings.setIfAbsent("race", String(index))),
    );
    expect(new Set(winners).size).toBe(1);
    expect(await settings.get("race")).toBe(winners[0]);
  });

  it("custom providers: upsert says whether the name was new; insertIfAbsent has one winner; list is in byte order", async () => {
    const repo = new CustomProviderRepository(store.db);
    const at = new Date("2030-01-01T00:00:00.000Z");
    expect(await repo.upsert("p", '{"v":1}', at)).toBe(true);
    expect(await repo.upsert("p", '{"v":2}', new Date("2030-01-02T00:00:00.000Z"))).toBe(false);
    expect(await repo.list()).toEqual([
      {
        name: "p",
        definition: '{"v":2}',
        created_at: at.toISOString(),
        updated_at: "2030-01-02T00:00:00.000Z",
      },
    ]);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, index) => repo.insertIfAbsent("q", `{"i":${index}}`, at)),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await repo.delete("q")).toBe(true);
    expect(await repo.delete("q")).toBe(false);
    expect(await repo.delete("p")).toBe(true);
    for (const name of MIXED) await repo.insertIfAbsent(name, "{}", at);
    expect((await repo.list()).map((row) => row.name)).toEqual(byteOrder(MIXED));
  });

  it("counts come back as numbers after Number(), whatever the driver returns", async () => {
    for (const name of ["x", "y", "z"]) await new SettingsRepository(store.db).set(name, "");
    const row = await store.db
      .selectFrom("settings")
      .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
      .executeTakeFirstOrThrow();
    expect(Number(row.n)).toBe(3);
  });
});

describe("openStore", () => {
  let fixture: StoreFixture | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it("opens the embedded SQLite file when SVC_DATABASE_URL is unset or empty", async () => {
    fixture = await createStoreFixture("sqlite");
    const layout = { database: join(fixture.dir, "server", "svc.db") };
    for (const env of [{}, { SVC_DATABASE_URL: "" }, { SVC_DATABASE_URL: "  " }]) {
      const store = await openStore(env, layout);
      expect(store.kind).toBe("sqlite");
      expect(store.description).toBe(`SQLite ${layout.database}`);
      await store.close();
    }
  });

  it("opens PostgreSQL for a postgres:// or postgresql:// URL", async () => {
    fixture = await createStoreFixture("postgres");
    const layout = { database: join(fixture.dir, "never-created.db") };
    for (const url of [fixture.url!, fixture.url!.replace(/^postgres:/, "postgresql:")]) {
      const store = await openStore({ SVC_DATABASE_URL: url }, layout);
      expect(store.kind).toBe("postgres");
      await store.probe();
      await store.close();
    }
  });

  it("refuses any other URL with a clear error that does not repeat it", async () => {
    const layout = { database: "/nonexistent/svc.db" };
    for (const url of ["mysql://root:hunter2-secret@db/svc", "sqlite:///tmp/x.db", "hunter2-secret"]) {
      const error = await openStore({ SVC_DATABASE_URL: url }, layout).then(
        () => expect.unreachable("should not open"),
        (e: unknown) => e as Error,
      );
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.message).toMatch(/SVC_DATABASE_URL/);
      expect(error.message).not.toContain("hunter2");
    }
  });
});

describe("PostgreSQL store", () => {
  const schemas: string[] = [];
  const stores: Store[] = [];
  const freshSchema = async () => {
    const schema = `svc_test_${randomBytes(6).toString("hex")}`;
    await adminQuery(`create schema ${schema}`);
    schemas.push(schema);
    return schema;
  };
  const open = async (url: string) => {
    const store = await openPostgresStore({ url });
    stores.push(store);
    return store;
  };

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const schema of schemas.splice(0)) await adminQuery(`drop schema if exists ${schema} cascade`);
  });

  it("describes itself by host, port, database and schema, never by user or password", async () => {
    const schema = await freshSchema();
    const url = new URL(withSearchPath(TEST_DATABASE_URL, schema));
    url.username = "postgres";
    url.password = "pw-CANARY-7f3a";
    const store = await open(url.toString());
    expect(store.description).toBe(`PostgreSQL 127.0.0.1:5432/test (schema ${schema})`);
    expect(describePostgresUrl("postgresql://u:p@db.example:6543/svc?password=q&sslmode=require")).toBe(
      "db.example:6543/svc",
    );
    expect(describePostgresUrl("postgres:///svc?host=/var/run/postgresql")).toBe(
      "/var/run/postgresql:5432/svc",
    );
  });

  it("fails to open with a message naming the server, never the password", async () => {
    const unreachable = "postgres://svc:pw-CANARY-7f3a@127.0.0.1:1/svc";
    const error = await openPostgresStore({ url: unreachable }).then(
      () => expect.unreachable("should not open"),
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(UnexpectedError);
    expect(error.message).toMatch(/^cannot open the PostgreSQL store at 127\.0\.0\.1:1\/svc: .*ECONNREFUSED/);
    expect(error.message).not.toContain("CANARY");

    const missing = withSearchPath(TEST_DATABASE_URL, `svc_test_absent_${randomBytes(4).toString("hex")}`);
    const noSchema = await openPostgresStore({ url: missing }).then(
      () => expect.unreachable("should not open"),
      (e: unknown) => e as Error,
    );
    expect(noSchema).toBeInstanceOf(InvalidInputError);
    expect(noSchema.message).toMatch(/search_path of SVC_DATABASE_URL names no existing schema/);
  });

  it("replicas starting together on a fresh schema all succeed and apply each migration once", async () => {
    const url = withSearchPath(TEST_DATABASE_URL, await freshSchema());
    const opened = await Promise.all([open(url), open(url), open(url)]);
    expect(opened).toHaveLength(3);
    for (const store of opened) await store.probe();
    const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(
      opened[0]!.db,
    );
    expect(rows.map((row) => row.name).at(-1)).toBe(LATEST_MIGRATION);
    expect(new Set(rows.map((row) => row.name)).size).toBe(rows.length);
  });

  it("concurrent migrators split the pending migrations between them: each applied by exactly one", async () => {
    const schema = await freshSchema();
    const url = withSearchPath(TEST_DATABASE_URL, schema);
    const migrators = Array.from(
      { length: 3 },
      () =>
        new Kysely<unknown>({
          dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }),
        }),
    );
    try {
      const results = await Promise.all(
        migrators.map((db) => migrateToLatest(db, { migrationTableSchema: schema })),
      );
      const applied = results.flat();
      expect(applied.at(-1)).toBe(LATEST_MIGRATION);
      expect(new Set(applied).size).toBe(applied.length);
      expect(results.filter((names) => names.length > 0)).toHaveLength(1);
    } finally {
      for (const db of migrators) await db.destroy();
    }
  });

  it("keeps its migration tables in its own schema, beside other stores in the same database", async () => {
    const [one, two] = [await freshSchema(), await freshSchema()];
    const first = await open(withSearchPath(TEST_DATABASE_URL, one));
    const second = await open(withSearchPath(TEST_DATABASE_URL, two));
    await new SettingsRepository(first.db).set("who", "one");
    expect(await new SettingsRepository(second.db).get("who")).toBeUndefined();
    const { rows } = await adminQuery(
      `select table_schema from information_schema.tables where table_name = 'kysely_migration' and table_schema in ('${one}', '${two}') order by 1`,
    );
    expect(rows.map((row) => row.table_schema)).toEqual([one, two].sort());
  });

  it("orders and compares the paged columns by byte, as SQLite does", async () => {
    const store = await open(withSearchPath(TEST_DATABASE_URL, await freshSchema()));
    const { rows } = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.columns
      where table_schema = current_schema() and collation_name = 'C' order by 1, 2`.execute(store.db);
    expect(rows.map((row) => `${row.table_name}.${row.column_name}`)).toEqual([
      "audit_events.id",
      "audit_events.timestamp",
      "browser_sessions.expires_at",
      "custom_providers.name",
    ]);
  });

  it("keeps byte order on a database whose default collation is natural-language (ICU en-US)", async () => {
    const database = `svc_test_icu_${randomBytes(4).toString("hex")}`;
    await adminQuery(
      `create database ${database} template template0 encoding 'UTF8' locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'`,
    );
    try {
      const url = new URL(TEST_DATABASE_URL);
      url.pathname = `/${database}`;
      const store = await openPostgresStore({ url: url.toString() });
      try {
        const natural = await sql<{ before: boolean }>`select 'a' < 'B' as before`.execute(store.db);
        expect(natural.rows[0]!.before).toBe(true);
        const repo = new CustomProviderRepository(store.db);
        for (const name of MIXED) await repo.insertIfAbsent(name, "{}", new Date());
        expect((await repo.list()).map((row) => row.name)).toEqual(byteOrder(MIXED));
      } finally {
        await store.close();
      }
    } finally {
      await adminQuery(`drop database if exists ${database} with (force)`);
    }
  });
});

function migrationOptions(store: Store) {
  if (store.kind === "sqlite") return {};
  return { migrationTableSchema: /\(schema (\w+)\)$/.exec(store.description)?.[1] };
}
