import { appendFileSync, mkdirSync, renameSync, statSync } from "node:fs";
import { dirname } from "node:path";

const MAX_BYTES = 5 * 1024 * 1024;
const KEPT_FILES = 3;

export type DebugLevel = "debug" | "info" | "warn" | "error";

/**
 * The client debug log: JSON lines appended synchronously (a CLI run writes a handful, and must
 * not lose them on exit), rotated by size to `svc.log.1..3`. With `--verbose` lines also go to
 * stderr. Callers pass metadata only, never secret values.
 */
export class DebugLog {
  readonly #path: string | undefined;
  readonly #verbose: boolean;
  readonly #stderr: (line: string) => void;
  #checkedSize = false;

  constructor(options: { path?: string; verbose: boolean; stderr: (line: string) => void }) {
    this.#path = options.path || undefined;
    this.#verbose = options.verbose;
    this.#stderr = options.stderr;
  }

  log(level: DebugLevel, message: string, fields: Record<string, unknown> = {}): void {
    const entry = { time: new Date().toISOString(), level, pid: process.pid, msg: message, ...fields };
    const line = `${JSON.stringify(entry)}\n`;
    if (this.#verbose) this.#stderr(`[${level}] ${message}${formatFields(fields)}\n`);
    if (!this.#path) return;
    try {
      this.#rotateIfLarge(this.#path);
      appendFileSync(this.#path, line, { mode: 0o600 });
    } catch {
      // A debug log that cannot be written must never break the command itself.
    }
  }

  debug(message: string, fields?: Record<string, unknown>): void {
    this.log("debug", message, fields);
  }

  #rotateIfLarge(path: string): void {
    if (this.#checkedSize) return;
    this.#checkedSize = true;
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    let size = 0;
    try {
      size = statSync(path).size;
    } catch {
      return;
    }
    if (size < MAX_BYTES) return;
    for (let index = KEPT_FILES - 1; index >= 1; index--) {
      try {
        renameSync(`${path}.${index}`, `${path}.${index + 1}`);
      } catch {}
    }
    renameSync(path, `${path}.1`);
  }
}

function formatFields(fields: Record<string, unknown>): string {
  const parts = Object.entries(fields).map(
    ([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`,
  );
  return parts.length ? ` ${parts.join(" ")}` : "";
}
