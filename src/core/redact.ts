/** How a secret is shown when it must be referred to: never more than its last 4 characters. */
export const REDACTION_MARK = "••••";

/** Shows the last 4 characters of a secret of 20 or more characters, nothing of a shorter one. */
export function redactSecret(secret: string): string {
  return secret.length >= 20 ? `${REDACTION_MARK}${secret.slice(-4)}` : REDACTION_MARK;
}
