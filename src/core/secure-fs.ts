import { chmodSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Creates a directory (and parents) readable only by its owner. */
export function ensurePrivateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o700);
}

/**
 * Writes a file readable only by its owner, atomically: a reader sees the old content or the new,
 * never half of it. With `exclusive`, fails if the file already exists (so two writers cannot
 * both create the same key).
 */
export function writePrivateFile(
  path: string,
  data: string | Uint8Array,
  options: { exclusive?: boolean } = {},
): void {
  ensurePrivateDir(dirname(path));
  if (options.exclusive) {
    writeFileSync(path, data, { mode: 0o600, flag: "wx" });
    return;
  }
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(temporary, data, { mode: 0o600 });
  renameSync(temporary, path);
}
