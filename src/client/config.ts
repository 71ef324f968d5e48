import { readFileSync } from "node:fs";
import { writePrivateFile } from "../core/secure-fs.ts";

/** `client/config.json`: which identity is active and which daemon to talk to. */
export interface ClientConfig {
  active_identity?: string;
  daemon_base_url?: string;
}

export function readClientConfig(path: string): ClientConfig {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
    return parsed && typeof parsed === "object" ? (parsed as ClientConfig) : {};
  } catch {
    return {};
  }
}

export function updateClientConfig(path: string, change: Partial<ClientConfig>): ClientConfig {
  const next = { ...readClientConfig(path), ...change };
  writePrivateFile(path, `${JSON.stringify(next, null, 2)}\n`);
  return next;
}
