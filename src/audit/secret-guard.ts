/**
 * The secret guard on the audit write path. Audit output must never hold a secret (a secret found
 * there is a defect), so anything that is, or merely looks like, a credential is replaced before
 * it is stored. Refusing an innocent value costs a little detail; storing a secret costs a leak.
 */
import type { AuditDetail, AuditDetailValue, AuditEventInput } from "./events.ts";

export const REFUSED_VALUE = "[refused: looks like a secret]";
export const MAX_DETAIL_VALUE_LENGTH = 512;
export const MAX_DETAIL_KEYS = 20;
/** Shorter "secrets" (e.g. a 4-digit PIN) would match ordinary text everywhere. */
const MIN_KNOWN_SECRET_LENGTH = 8;

const GUARDED_FIELDS = ["event", "status", "provider", "connection", "identity", "principal_id"] as const;

/** svc's own opaque ids and did:key URIs (public keys): random-looking, but not credentials. */
const PUBLIC_ID = /^(?:(?:prn|vlt|evt|ses)_[A-Za-z0-9_-]{1,40}|did:key:z[1-9A-HJ-NP-Za-km-z]{1,60})$/;

const SECRET_SHAPES: readonly RegExp[] = [
  // A JWT (or JWE): a base64url JSON header, `{"` encodes as `eyJ`, then dot-separated parts.
  /eyJ[\w-]{8,}\.[\w-]*\.[\w-]*/,
  // An HTTP credential.
  /\b(?:Bearer|Basic)\s+[\w.~+/=-]{8,}/i,
  // Well-known key prefixes (`sk-` also covers `sk-ant-`). Requiring a digit or capital in the
  // body lets snake_case words such as `re_authentication_required` through.
  /(?<![A-Za-z0-9])(?:sk-|gh[oprsu]_|github_pat_|xox[abprs]-|glpat-|hf_|r8_|[prs]k_(?:live|test)_|SG\.|re_|AIza)(?=[\w.-]*[A-Z0-9])[\w.-]{16,}/,
  // AWS access key ids (long-lived and temporary).
  /(?<![A-Za-z0-9])A(?:KI|SI)A[A-Z0-9]{16}/,
];

/** A long run of base64-ish characters mixing letters and digits: an unknown kind of key or token. */
const HIGH_ENTROPY_RUN = /[A-Za-z0-9+/_=-]{32,}/g;

/** The shortest text any shape above matches (a JWT: `eyJ`, 8 characters, two dots). */
const SHORTEST_SHAPE = 13;

/** Detail keys that name a secret, compared without case or separators (`X-Api-Key` → `xapikey`). */
const SECRET_KEY_NAME = /token|secret|password|passwd|apikey|authorization|cookie|privatekey/;

export interface GuardResult {
  sanitised: AuditEventInput;
  /** Paths of the replaced fields (`identity`, `detail.password`); never their values. */
  refused: string[];
}

/** Whether a value has the shape of a token or key. */
export function looksLikeSecret(value: string): boolean {
  // Most audited values (methods, statuses, names, numbers) are shorter: no pattern need run.
  if (value.length < SHORTEST_SHAPE || PUBLIC_ID.test(value)) return false;
  if (SECRET_SHAPES.some((shape) => shape.test(value))) return true;
  return Array.from(value.matchAll(HIGH_ENTROPY_RUN), ([run]) => run).some(
    (run) => /[A-Za-z]/.test(run) && /[0-9]/.test(run),
  );
}

/**
 * Returns a copy of `input` in which every field that contains one of `knownSecrets` or looks like
 * a secret is replaced by REFUSED_VALUE, as is every detail value under a secret-like key. Detail
 * keys that are themselves secret-looking are renamed `refused_key_<n>`. Detail is cut to
 * MAX_DETAIL_KEYS keys and its strings to MAX_DETAIL_VALUE_LENGTH characters.
 */
export function guardEvent(input: AuditEventInput, knownSecrets: readonly string[] = []): GuardResult {
  const secrets = knownSecrets.filter((secret) => secret.length >= MIN_KNOWN_SECRET_LENGTH);
  const isSecret = (value: string) =>
    secrets.some((secret) => value.includes(secret)) || looksLikeSecret(value);

  const sanitised: AuditEventInput = { ...input };
  const refused: string[] = [];
  for (const field of GUARDED_FIELDS) {
    const value = input[field];
    if (typeof value === "string" && isSecret(value)) {
      sanitised[field] = REFUSED_VALUE;
      refused.push(field);
    }
  }
  if (input.detail) sanitised.detail = guardDetail(input.detail, isSecret, refused);
  return { sanitised, refused };
}

function guardDetail(
  detail: AuditDetail,
  isSecret: (value: string) => boolean,
  refused: string[],
): AuditDetail {
  const entries: [string, AuditDetailValue][] = [];
  let refusedKeys = 0;
  for (const [key, value] of Object.entries(detail).slice(0, MAX_DETAIL_KEYS)) {
    // Numbers too: a PIN or account number may be among the known secrets.
    const text = typeof value === "string" || typeof value === "number" ? String(value) : undefined;
    if (isSecret(key)) {
      const placeholder = `refused_key_${++refusedKeys}`;
      entries.push([placeholder, REFUSED_VALUE]);
      refused.push(`detail.${placeholder}`);
    } else if (namesSecret(key) || (text !== undefined && isSecret(text))) {
      entries.push([key, REFUSED_VALUE]);
      refused.push(`detail.${key}`);
    } else {
      entries.push([key, typeof value === "string" ? truncate(value) : value]);
    }
  }
  // fromEntries defines own properties, so a `__proto__` key stays data instead of a prototype.
  return Object.fromEntries(entries);
}

function namesSecret(key: string): boolean {
  return SECRET_KEY_NAME.test(key.toLowerCase().replace(/[^a-z0-9]/g, ""));
}

function truncate(value: string): string {
  if (value.length <= MAX_DETAIL_VALUE_LENGTH) return value;
  // Drop a high surrogate left alone by the cut, so the stored text stays valid UTF-16.
  return `${value.slice(0, MAX_DETAIL_VALUE_LENGTH - 1).replace(/[\uD800-\uDBFF]$/, "")}…`;
}
