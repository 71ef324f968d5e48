import { readFileSync } from "node:fs";
import { nodeCrypto } from "./node-crypto.ts";
import { writePrivateFile } from "./secure-fs.ts";

const { randomBytes } = nodeCrypto;

/**
 * The daemon's bootstrap secret: a random value in a 0600 file under `server/`. A local CLI that
 * shares SVC_HOME proves it can read it, and so claims its identity with no browser step.
 */
export function ensureBootstrapSecret(path: string): Buffer {
  try {
    return decode(readFileSync(path, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  try {
    writePrivateFile(path, `${randomBytes(32).toString("base64url")}\n`, { exclusive: true });
  } catch (error) {
    // Another daemon created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return decode(readFileSync(path, "utf8"));
}

function decode(text: string): Buffer {
  const secret = Buffer.from(text.trim(), "base64url");
  if (secret.length < 32)
    throw new Error("the bootstrap secret file is damaged; delete it and restart the daemon");
  return secret;
}

/** Reads the bootstrap secret, or undefined when this process cannot (another user, remote daemon). */
export function readBootstrapSecret(path: string): Buffer | undefined {
  try {
    return decode(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}
