import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";
import type { Command } from "commander";
import type { AuditEventRecord, AuditPageRecord } from "../../api/audit.ts";
import { InvalidInputError } from "../../core/errors.ts";
import type { CliContext, GlobalOptions } from "../context.ts";
import { probeHealth } from "../daemon-control.ts";
import { shortTime } from "../format.ts";
import { parseCount } from "./daemon.ts";

export interface LogOptions {
  n: number;
  raw?: boolean;
}

/** The daemon clamps `limit` to 1..500 (docs/daemon-api.md, "Audit"): larger counts are paged. */
const PAGE_MAX = 500;
/** Rotated copies kept beside a log: the audit log keeps 5, the client debug log 3. */
const MAX_ROTATED = 5;
const CHUNK_BYTES = 64 * 1024;

/**
 * `svc log`: the last N audit entries, newest first (as `git log` reads), from the daemon
 * (`GET /api/audit/events`, role-scoped, local or remote). When no daemon answers and this home
 * has the daemon's JSON-lines audit file, the entries come from that file instead, said on stderr;
 * svc log never starts a daemon just to read its log. `--raw` prints the end of the client debug log.
 */
export async function runLog(
  context: CliContext,
  options: LogOptions,
  globals: GlobalOptions,
): Promise<void> {
  if (options.raw) {
    runRawLog(context, options.n, globals.logFile);
    return;
  }
  const events = await auditEntries(context, options.n);
  if (context.out.options.json) {
    context.out.json(events);
    return;
  }
  if (events.length === 0) {
    context.out.status("No audit entries yet; logins, logouts and other changes are recorded here");
    return;
  }
  const { colors } = context.out;
  context.out.table(
    ["TIMESTAMP", "EVENT", "PROVIDER", "CONNECTION", "IDENTITY", "STATUS"],
    events.map((event) => [
      shortTime(event.timestamp),
      event.event,
      event.provider ?? "-",
      event.connection ?? "-",
      event.identity ?? "-",
      // The last column is not padded, so colouring it keeps the table aligned.
      event.status === "success" ? event.status : colors.red(event.status),
    ]),
  );
}

async function auditEntries(context: CliContext, count: number): Promise<AuditEventRecord[]> {
  const baseUrl = context.baseUrl;
  const file = context.layout.auditLog;
  if (!(await probeHealth(baseUrl)) && existsSync(file)) {
    context.out.warn(
      `no svc daemon answers at ${baseUrl}; showing the last lifecycle entries of the local audit log ${file} (proxy traffic is in proxy.log beside it)`,
    );
    return auditEntriesFromFile(file, count);
  }
  const client = await context.daemon();
  const events: AuditEventRecord[] = [];
  let cursor: string | undefined;
  do {
    const query = new URLSearchParams({ limit: String(Math.min(PAGE_MAX, count - events.length)) });
    if (cursor) query.set("cursor", cursor);
    const page = await client.get<AuditPageRecord>(`/api/audit/events?${query}`);
    events.push(...page.events);
    cursor = page.next_cursor;
  } while (cursor && events.length < count);
  return events.slice(0, count);
}

/** The last `count` entries of the daemon's JSON-lines audit log (and its rotated files), newest first. */
export function auditEntriesFromFile(path: string, count: number): AuditEventRecord[] {
  const events: AuditEventRecord[] = [];
  // Lines that are not events (a torn last line, say) are skipped, so read a little more than asked.
  for (const line of lastLines(path, count + 16).reverse()) {
    try {
      const event = JSON.parse(line) as AuditEventRecord;
      if (event && typeof event.event === "string" && typeof event.timestamp === "string") events.push(event);
    } catch {}
    if (events.length === count) break;
  }
  return events;
}

function runRawLog(context: CliContext, count: number, logFile: string | undefined): void {
  const path = logFile ?? context.layout.clientLog;
  if (path === "")
    throw new InvalidInputError('the client debug log is disabled (--log-file ""); nothing to show');
  if (!existsSync(path)) {
    if (context.out.options.json) context.out.json([]);
    else context.out.status(`no client debug log at ${path} yet`);
    return;
  }
  const lines = lastLines(path, count);
  if (context.out.options.json) {
    context.out.json(
      lines.map((line) => {
        try {
          return JSON.parse(line) as unknown;
        } catch {
          return line;
        }
      }),
    );
    return;
  }
  for (const line of lines) context.out.line(line);
}

/**
 * The last `count` lines of a log, oldest first, continuing into its rotated copies (`path.1`,
 * `path.2`, ...) when the live file has fewer. Reads backwards in chunks: a large log is not read whole.
 */
export function lastLines(path: string, count: number): string[] {
  const lines: string[] = [];
  for (let index = 0; index <= MAX_ROTATED && lines.length < count; index++) {
    const file = index === 0 ? path : `${path}.${index}`;
    if (!existsSync(file)) break;
    lines.unshift(...lastLinesOfFile(file, count - lines.length));
  }
  return lines;
}

function lastLinesOfFile(path: string, count: number): string[] {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return [];
  }
  try {
    let position = fstatSync(fd).size;
    let buffer = Buffer.alloc(0);
    let newlines = 0;
    // One newline more than asked for, so the first line kept is whole.
    while (position > 0 && newlines <= count) {
      const length = Math.min(CHUNK_BYTES, position);
      position -= length;
      const chunk = Buffer.alloc(length);
      readSync(fd, chunk, 0, length, position);
      for (const byte of chunk) if (byte === 0x0a) newlines++;
      buffer = Buffer.concat([chunk, buffer]);
    }
    const lines = buffer.toString("utf8").split("\n");
    if (position > 0) lines.shift();
    return lines.filter((line) => line.trim() !== "").slice(-count);
  } finally {
    closeSync(fd);
  }
}

export function registerLogCommand(program: Command, contextFor: (command: Command) => CliContext): void {
  program
    .command("log")
    .description("Show the last audit entries, newest first (--raw: the client debug log)")
    .option("-n <count>", "how many entries (with --raw: lines)", parseCount, 50)
    .option("--raw", "print the end of the client debug log instead (oldest line first)")
    .action(async (options: LogOptions, command: Command) =>
      runLog(contextFor(command), options, command.optsWithGlobals<GlobalOptions>()),
    );
}
