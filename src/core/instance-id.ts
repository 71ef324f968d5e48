import { readFileSync } from "node:fs";
import { newId } from "./ids.ts";
import { writePrivateFile } from "./secure-fs.ts";

/**
 * `server/instance.id`: names the daemon of one SVC_HOME. The daemon reports it in `/api/health`,
 * so a CLI can tell its own home's daemon from another home's listening on the same port. It is
 * not a secret: it only tells homes apart.
 */
export function ensureInstanceId(path: string): string {
  const existing = readInstanceId(path);
  if (existing) return existing;
  try {
    writePrivateFile(path, `${newId("ins")}\n`, { exclusive: true });
  } catch (error) {
    // Another daemon of this home created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return readInstanceId(path) ?? "";
}

/** The home's daemon instance id, or undefined before its daemon first started. */
export function readInstanceId(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
