/**
 * The aws_sigv4 login: an access key pair (and optionally a session token and a default region)
 * pasted as one JSON object or as `KEY=value` lines (what `aws configure export-credentials
 * --format env` and most `.env` files hold). Messages name fields, never their values.
 */
import { InvalidInputError } from "../core/errors.ts";

export interface AwsCredentials {
  access_key_id: string;
  secret_access_key: string;
  session_token?: string;
  /** The default region, given to the child as AWS_REGION; signing uses the host's region. */
  region?: string;
}

/** The names each field may be given under (JSON keys and variable names alike, any case). */
const FIELD_NAMES: Readonly<Record<keyof AwsCredentials, readonly string[]>> = {
  access_key_id: ["access_key_id", "aws_access_key_id", "accesskeyid"],
  secret_access_key: ["secret_access_key", "aws_secret_access_key", "secretaccesskey"],
  session_token: ["session_token", "aws_session_token", "sessiontoken"],
  region: ["region", "aws_region", "aws_default_region"],
};

/**
 * Fields `aws configure export-credentials` prints besides the keys (`--format process` JSON has
 * `Version` and `Expiration`, `--format env` an `AWS_CREDENTIAL_EXPIRATION`): accepted, not kept.
 */
const IGNORED = new Set(["version", "expiration", "aws_credential_expiration"]);

const ACCESS_KEY_ID = /^[A-Z0-9]{16,128}$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find control characters
const PLAIN_TOKEN = /^[^\s\u0000-\u001f\u007f]+$/;
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/;
const MAX_SECRET_LENGTH = 256;
const MAX_SESSION_TOKEN_LENGTH = 8192;

function fieldFor(name: string): keyof AwsCredentials | undefined {
  const lower = name.toLowerCase();
  return (Object.keys(FIELD_NAMES) as (keyof AwsCredentials)[]).find((field) =>
    FIELD_NAMES[field].includes(lower),
  );
}

/** `KEY=value` lines: `export ` prefixes, quotes, blank lines and `#` comments allowed. */
function parseLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) throw new InvalidInputError(`line ${index + 1} is not KEY=value`);
    out[match[1]!] = match[2]!.replace(/^(["'])(.*)\1$/, "$2");
  }
  return out;
}

function parseJson(text: string): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidInputError("the AWS credentials are not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidInputError("the AWS credentials must be one JSON object");
  }
  const out: Record<string, string> = {};
  for (const [key, field] of Object.entries(value)) {
    if (IGNORED.has(key.toLowerCase())) continue;
    if (typeof field !== "string") throw new InvalidInputError(`${key} must be a string`);
    out[key] = field;
  }
  return out;
}

/** Parses and checks pasted AWS credentials; throws InvalidInputError saying what is wrong. */
export function parseAwsCredentials(text: string): AwsCredentials {
  const trimmed = text.trim();
  if (trimmed === "") throw new InvalidInputError("the AWS credentials are empty");
  const entries = trimmed.startsWith("{") ? parseJson(trimmed) : parseLines(trimmed);
  const found: Partial<Record<keyof AwsCredentials, string>> = {};
  const unknown: string[] = [];
  for (const [name, value] of Object.entries(entries)) {
    const field = fieldFor(name);
    if (IGNORED.has(name.toLowerCase())) continue;
    if (!field) unknown.push(name);
    else if (value.trim() !== "") found[field] = value.trim();
  }
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `unknown field${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; expected AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and optionally AWS_SESSION_TOKEN and AWS_REGION`,
    );
  }
  const { access_key_id, secret_access_key, session_token, region } = found;
  if (!access_key_id || !secret_access_key) {
    throw new InvalidInputError(
      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are both required (as JSON or KEY=value lines)",
    );
  }
  if (!ACCESS_KEY_ID.test(access_key_id)) {
    throw new InvalidInputError(
      "AWS_ACCESS_KEY_ID does not look like an access key id (upper-case letters and digits, such as AKIA...)",
    );
  }
  if (secret_access_key.length > MAX_SECRET_LENGTH || !PLAIN_TOKEN.test(secret_access_key)) {
    throw new InvalidInputError(
      "AWS_SECRET_ACCESS_KEY contains spaces or control characters, or is too long",
    );
  }
  if (
    session_token !== undefined &&
    (session_token.length > MAX_SESSION_TOKEN_LENGTH || !PLAIN_TOKEN.test(session_token))
  ) {
    throw new InvalidInputError("AWS_SESSION_TOKEN contains spaces or control characters, or is too long");
  }
  if (region !== undefined && !REGION.test(region)) {
    throw new InvalidInputError(`AWS_REGION "${region}" is not a region name such as us-east-1`);
  }
  return {
    access_key_id,
    secret_access_key,
    ...(session_token ? { session_token } : {}),
    ...(region ? { region } : {}),
  };
}
