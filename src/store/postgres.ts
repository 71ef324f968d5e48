import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { InvalidInputError, UnexpectedError } from "../core/errors.ts";
import { migrateToLatest } from "./migrations.ts";
import type { Database } from "./schema.ts";
import { type Store, storeOver } from "./store.ts";

/**
 * Connections per daemon. A resolve is one or two short queries, so a few connections keep up
 * with far more requests than one process serves; ten per replica leaves room under PostgreSQL's
 * default `max_connections` (100) for several replicas and the administrator.
 */
const POOL_SIZE = 10;
const CONNECT_TIMEOUT_MS = 10_000;
const IDLE_TIMEOUT_MS = 30_000;

export interface PostgresStoreOptions {
  /** `postgres://` or `postgresql://`; `?options=-c search_path=<schema>` picks a schema. */
  url: string;
}

/**
 * Opens the store on PostgreSQL (the hosted mode) and applies migrations. Replicas starting
 * together apply each migration once: Kysely's migrator holds an advisory lock while it migrates.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const target = describePostgresUrl(options.url);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    application_name: "svc",
  });
  // An idle connection the server drops emits here; the pool discards it and the next query
  // opens another. Without a listener the process would exit. `probe()` reports a lasting outage.
  pool.on("error", () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  let description = `PostgreSQL ${target}`;
  try {
    const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
    const schema = rows[0]?.schema;
    if (!schema) {
      throw new InvalidInputError(
        `the search_path of SVC_DATABASE_URL names no existing schema in ${target}; create the schema first`,
      );
    }
    if (schema !== "public") description += ` (schema ${schema})`;
    // The migration tables live in the store's own schema: Kysely would otherwise take a
    // kysely_migration table of any schema in the database for this one's.
    await migrateToLatest(db as Kysely<unknown>, { migrationTableSchema: schema });
  } catch (error) {
    await db.destroy().catch(() => {});
    if (error instanceof InvalidInputError) throw error;
    throw new UnexpectedError(
      `cannot open the PostgreSQL store at ${target}: ${scrubPassword(errorText(error), options.url)}`,
    );
  }
  return storeOver(db, "postgres", description);
}

/**
 * `host:port/database` of a PostgreSQL URL: no user, no password, no query parameters (a query
 * may carry `password=` or key paths). Throws InvalidInputError for anything but postgres URLs.
 */
export function describePostgresUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError("SVC_DATABASE_URL is not a URL; expected postgres://user@host:5432/database");
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    // Only the scheme is repeated: the rest of the URL may hold a password.
    throw new InvalidInputError(
      `SVC_DATABASE_URL must be a postgres:// or postgresql:// URL, not ${parsed.protocol}//...; unset it for the embedded SQLite store`,
    );
  }
  const host = parsed.hostname || parsed.searchParams.get("host") || "localhost";
  const database = decodeURIComponent(parsed.pathname.slice(1)) || "(default database)";
  return `${host}:${parsed.port || "5432"}/${database}`;
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && !error.message.includes(code)
    ? `${error.message} (${code})`
    : error.message;
}

/** A driver message should never hold the password; this makes sure (plain and URL-encoded forms). */
function scrubPassword(text: string, url: string): string {
  let forms: string[] = [];
  try {
    const parsed = new URL(url);
    forms = [parsed.password, parsed.searchParams.get("password") ?? ""];
    forms.push(...forms.map(safeDecode));
  } catch {
    return text;
  }
  let scrubbed = text;
  for (const form of new Set(forms)) if (form) scrubbed = scrubbed.split(form).join("[redacted]");
  return scrubbed;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
