import type BetterSqlite3 from "better-sqlite3";
import type { SqliteDatabase, SqliteStatement } from "kysely";

const MAX_STATEMENTS = 256;

/**
 * Kysely's SQLite driver prepares every statement on every query; preparing is a third of the
 * cost of a small query. This keeps the most recently used prepared statements (bounded, LRU).
 * better-sqlite3 is synchronous, so a statement is never used by two queries at once.
 */
export function withStatementCache(connection: BetterSqlite3.Database): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => connection.close(),
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached) {
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = connection.prepare(sql) as unknown as SqliteStatement;
      statements.set(sql, statement);
      if (statements.size > MAX_STATEMENTS) statements.delete(statements.keys().next().value!);
      return statement;
    },
  };
}
