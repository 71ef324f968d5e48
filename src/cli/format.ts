import { InvalidArgumentError } from "commander";
import type { Connection } from "../api/connections.ts";
import { CONNECTION_NAME_PATTERN } from "../api/names.ts";

export { segment } from "../client/daemon-api.ts";

/** Commander parser for `--connection` / `<connection>`: the daemon's name rule, checked up front (exit 2). */
export function parseConnectionName(value: string): string {
  if (!CONNECTION_NAME_PATTERN.test(value)) {
    throw new InvalidArgumentError("must be 1-63 characters of A-Z, a-z, 0-9, '_', '.' or '-'");
  }
  return value;
}

/** The credential column: the redacted key, or the token's shape (never a secret). */
export function describeCredential(credential: Connection["credential"]): string {
  if (credential.type === "api_key") return credential.redacted;
  if (credential.type === "aws_sigv4") {
    return `aws ${credential.access_key_id} ${credential.redacted}${credential.has_session_token ? " +session" : ""}`;
  }
  const scopes = credential.scopes.length > 0 ? ` [${credential.scopes.join(" ")}]` : "";
  return `oauth2 ${credential.token_type}${scopes}${credential.has_refresh_token ? " +refresh" : ""}`;
}

/** An ISO timestamp without milliseconds, for tables. */
export function shortTime(iso: string | null | undefined): string {
  return iso ? iso.replace(/\.\d+Z$/, "Z") : "-";
}

export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}
