/**
 * The audit log: the single write path for audit events (validate → secret guard → database row →
 * JSON line) and the keyset-paged reader behind `GET /api/audit/events` and `svc log`.
 *
 * The database is the source of truth. The JSON-lines files are a convenience copy for tools that
 * read `~/.svc/server/logs/svc.log` (internal events) and `proxy.log` (external events, the
 * proxy's traffic); a failure to write one is reported, not thrown. Each file rotates on its own,
 * so no volume of traffic can push a lifecycle event off the disk.
 */
import { chmodSync, closeSync, openSync } from "node:fs";
import { basename, dirname } from "node:path";
import type { Kysely, Selectable } from "kysely";
import { createStream, type RotatingFileStream } from "rotating-file-stream";
import { z } from "zod";
import { InvalidInputError, UnexpectedError } from "../core/errors.ts";
import { ensurePrivateDir } from "../core/secure-fs.ts";
import type { AuditEventsTable, Database } from "../store/schema.ts";
import {
  AUDIT_SOURCES,
  type AuditEvent,
  type AuditEventInput,
  AuditEventInputSchema,
  type AuditSource,
  EVENT_ID_PATTERN,
  newEventId,
} from "./events.ts";
import { guardEvent } from "./secret-guard.ts";

export const DEFAULT_AUDIT_LIMIT = 50;
export const MAX_AUDIT_LIMIT = 500;
/** Rows per INSERT: 10 columns each keeps a batch well under SQLite's bound-parameter limit. */
const INSERT_BATCH = 500;

export interface AuditLogOptions {
  db: Kysely<Database>;
  /** A JSON-lines copy of every stored internal event, rotated at 10 MB. */
  logPath?: string;
  /** The same for external events; without it they are only stored. */
  externalLogPath?: string;
  now?: () => Date;
  /** Told which fields the guard replaced, so the caller can warn about a leaky code path. */
  onRefused?: (info: { event: string; fields: string[] }) => void;
  /** Told when the log file cannot be written (it is then no longer written); default: a process warning. */
  onLogError?: (error: Error) => void;
}

export interface RecordOptions {
  /** Secret values in play for this operation (e.g. the token just issued); never stored. */
  secrets?: readonly string[];
}

export interface AuditQueryOptions {
  /** Defaults to DEFAULT_AUDIT_LIMIT; clamped to 1..MAX_AUDIT_LIMIT. */
  limit?: number;
  /** `next_cursor` of the previous page. */
  cursor?: string;
  /** Only this principal's events (the view of a `user`). */
  principalId?: string;
  provider?: string;
  event?: string;
  /** Only this identity's events (an agent's handle). */
  identity?: string;
  /** ISO-8601; inclusive. */
  since?: string;
  /** ISO-8601; exclusive. */
  until?: string;
}

export interface AuditPage {
  /** Newest first. */
  events: AuditEvent[];
  /** Present when more (older) events follow. */
  next_cursor?: string;
}

type AuditRow = Selectable<AuditEventsTable>;

const InstantSchema = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);
/** A cursor is the (timestamp, id) of the last event of a page. */
const CursorSchema = z.tuple([z.iso.datetime({ precision: 3 }), z.string().regex(EVENT_ID_PATTERN)]);

export class AuditLog {
  readonly #db: Kysely<Database>;
  readonly #now: () => Date;
  readonly #onRefused: AuditLogOptions["onRefused"];
  readonly #files: Record<AuditSource, RotatingFileStream | undefined>;
  #closed = false;

  constructor(options: AuditLogOptions) {
    this.#db = options.db;
    this.#now = options.now ?? (() => new Date());
    this.#onRefused = options.onRefused;
    const onLogError = options.onLogError ?? ((error: Error) => process.emitWarning(error));
    const open = (path: string | undefined) => {
      if (!path) return undefined;
      const file = openLogFile(path);
      file.on("error", onLogError);
      return file;
    };
    this.#files = { internal: open(options.logPath), external: open(options.externalLogPath) };
  }

  async record(input: AuditEventInput, options: RecordOptions = {}): Promise<AuditEvent> {
    const [event] = await this.recordMany([input], options);
    return event!;
  }

  /** Stores a batch in one transaction: all of it or none. */
  async recordMany(inputs: readonly AuditEventInput[], options: RecordOptions = {}): Promise<AuditEvent[]> {
    if (this.#closed) throw new UnexpectedError("The audit log is closed.");
    const prepared = inputs.map((input) => this.#prepare(input, options.secrets));
    if (prepared.length === 0) return [];
    const events = prepared.map((entry) => entry.event);
    await this.#db.transaction().execute(async (trx) => {
      for (let start = 0; start < events.length; start += INSERT_BATCH) {
        const rows = events.slice(start, start + INSERT_BATCH).map(toRow);
        await trx.insertInto("audit_events").values(rows).execute();
      }
    });
    for (const source of AUDIT_SOURCES) {
      const file = this.#files[source];
      const lines = events
        .filter((event) => event.source === source)
        .map((event) => `${JSON.stringify(event)}\n`);
      if (file?.writable && lines.length > 0) file.write(lines.join(""));
    }
    for (const { event, refused } of prepared) {
      if (refused.length > 0) this.#onRefused?.({ event: event.event, fields: refused });
    }
    return events;
  }

  async query(options: AuditQueryOptions = {}): Promise<AuditPage> {
    const limit = clampLimit(options.limit);
    const cursor = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
    const since = options.since === undefined ? undefined : parseInstant("since", options.since);
    const until = options.until === undefined ? undefined : parseInstant("until", options.until);
    const filters = { provider: options.provider, event: options.event, identity: options.identity };
    for (const [name, value] of Object.entries(filters)) {
      // Nothing stored holds NUL, and PostgreSQL refuses it as a parameter: same answer on both stores.
      if (value?.includes("\u0000")) throw new InvalidInputError(`'${name}' must not contain NUL.`);
    }
    let query = this.#db.selectFrom("audit_events").selectAll();
    if (options.principalId !== undefined) query = query.where("principal_id", "=", options.principalId);
    if (options.provider !== undefined) query = query.where("provider", "=", options.provider);
    if (options.event !== undefined) query = query.where("event", "=", options.event);
    if (options.identity !== undefined) query = query.where("identity", "=", options.identity);
    if (since !== undefined) query = query.where("timestamp", ">=", since);
    if (until !== undefined) query = query.where("timestamp", "<", until);
    if (cursor) {
      query = query.where((eb) =>
        eb(eb.refTuple("timestamp", "id"), "<", eb.tuple(cursor.timestamp, cursor.id)),
      );
    }
    // One row more than asked says whether another page follows.
    const rows = await query
      .orderBy("timestamp", "desc")
      .orderBy("id", "desc")
      .limit(limit + 1)
      .execute();
    const events = rows.slice(0, limit).map(fromRow);
    const last = events.at(-1);
    return rows.length > limit && last ? { events, next_cursor: encodeCursor(last) } : { events };
  }

  /**
   * Deletes external events stamped before `before` (the retention of proxy traffic); internal
   * events are kept. Resolves how many were deleted.
   */
  async pruneExternal(before: Date): Promise<number> {
    const result = await this.#db
      .deleteFrom("audit_events")
      .where("source", "=", "external")
      .where("timestamp", "<", before.toISOString())
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Flushes and closes the log files. The database belongs to the store and stays open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(
      Object.values(this.#files).map(async (file) => {
        if (!file || file.destroyed) return;
        // A write error during the flush has already gone to onLogError.
        await new Promise<void>((resolve) => file.end(() => resolve()));
      }),
    );
  }

  #prepare(input: AuditEventInput, secrets: readonly string[] | undefined) {
    const parsed = AuditEventInputSchema.safeParse(input);
    if (!parsed.success) {
      // Top-level field names only: a detail key could itself be the secret.
      const fields = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? "event")))];
      throw new InvalidInputError(`Invalid audit event: bad ${fields.join(", ")}.`, { cause: parsed.error });
    }
    const { sanitised, refused } = guardEvent(parsed.data, secrets);
    const timestamp = sanitised.timestamp ?? this.#now();
    const event: AuditEvent = {
      timestamp: timestamp.toISOString(),
      event: sanitised.event,
      source: sanitised.source ?? "internal",
      status: sanitised.status,
      provider: sanitised.provider ?? null,
      connection: sanitised.connection ?? null,
      identity: sanitised.identity ?? null,
      principal_id: sanitised.principal_id ?? null,
      id: newEventId(timestamp),
    };
    if (sanitised.detail && Object.keys(sanitised.detail).length > 0) event.detail = sanitised.detail;
    return { event, refused };
  }
}

function openLogFile(logPath: string): RotatingFileStream {
  ensurePrivateDir(dirname(logPath));
  // The stream opens the file asynchronously and keeps the mode of an existing file: create or
  // narrow it to 0600 now. Rotated files are renamed from it and keep that mode.
  closeSync(openSync(logPath, "a", 0o600));
  chmodSync(logPath, 0o600);
  // `rotate` keeps the live file plus svc.log.1 .. svc.log.5 (proxy.log.1 .. for external events).
  return createStream(basename(logPath), { path: dirname(logPath), size: "10M", rotate: 5, mode: 0o600 });
}

function toRow(event: AuditEvent): AuditRow {
  const { detail, ...columns } = event;
  return { ...columns, detail: detail ? JSON.stringify(detail) : null };
}

function fromRow(row: AuditRow): AuditEvent {
  const event: AuditEvent = {
    timestamp: row.timestamp,
    event: row.event,
    source: row.source,
    status: row.status,
    provider: row.provider,
    connection: row.connection,
    identity: row.identity,
    principal_id: row.principal_id,
    id: row.id,
  };
  if (row.detail !== null) event.detail = JSON.parse(row.detail);
  return event;
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_AUDIT_LIMIT;
  if (!Number.isFinite(limit)) throw new InvalidInputError("The audit limit must be a number.");
  return Math.min(MAX_AUDIT_LIMIT, Math.max(1, Math.trunc(limit)));
}

/** Normalises to the stored form (UTC, milliseconds), so text comparison is time comparison. */
function parseInstant(name: string, value: string): string {
  if (!InstantSchema.safeParse(value).success) {
    throw new InvalidInputError(`'${name}' must be an ISO-8601 date or date-time.`);
  }
  return new Date(value).toISOString();
}

function encodeCursor(event: AuditEvent): string {
  return Buffer.from(JSON.stringify([event.timestamp, event.id])).toString("base64url");
}

function decodeCursor(cursor: string): { timestamp: string; id: string } {
  let decoded: unknown;
  try {
    decoded = /^[A-Za-z0-9_-]+$/.test(cursor)
      ? JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
      : undefined;
  } catch {
    // Not JSON: reported below like any other malformed cursor.
  }
  const parsed = CursorSchema.safeParse(decoded);
  if (!parsed.success) throw new InvalidInputError("The audit cursor is malformed.");
  const [timestamp, id] = parsed.data;
  return { timestamp, id };
}
