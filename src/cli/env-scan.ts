import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Finding API keys in a project's dotenv files and in the process environment, for `svc onboard`.
 * Values are read, compared and handed to the daemon; nothing here prints or logs one.
 */

/** One problem in a dotenv file: where, and why the line was ignored (never its value). */
export interface DotenvProblem {
  line: number;
  reason: string;
}

export interface ParsedDotenv {
  /** Variable name → value; a name assigned twice keeps its last value (as a shell would). */
  values: Map<string, string>;
  problems: DotenvProblem[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const DOUBLE_QUOTED_ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\" };

/**
 * Parses dotenv text the way the `dotenv` package reads it, without ever evaluating anything:
 * `KEY=value` lines, an optional `export ` prefix, `#` comments (whole lines, or after a space in
 * an unquoted value), single quotes and backticks (literal), double quotes (`\n`, `\r`, `\t`,
 * `\"`, `\\` escapes), multi-line quoted values, and `=` inside values. `$VAR` and `$(...)` stay
 * as written: nothing is expanded or run.
 */
export function parseDotenv(text: string): ParsedDotenv {
  const values = new Map<string, string>();
  const problems: DotenvProblem[] = [];
  const lines = text.replace(/^\uFEFF/, "").split(/\r\n|\r|\n/);
  for (let index = 0; index < lines.length; index++) {
    const lineNumber = index + 1;
    const line = lines[index]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const assignment = /^(?:export\s+)?([^=\s]+)\s*=\s*(.*)$/s.exec(line);
    if (!assignment) {
      problems.push({ line: lineNumber, reason: "not a KEY=value line" });
      continue;
    }
    const name = assignment[1]!;
    if (!NAME.test(name)) {
      problems.push({ line: lineNumber, reason: `"${name.slice(0, 64)}" is not a variable name` });
      continue;
    }
    let rest = assignment[2]!;
    const quote = rest[0];
    if (quote !== '"' && quote !== "'" && quote !== "`") {
      // An unquoted value ends at a comment that follows whitespace.
      const comment = rest.search(/\s#/);
      values.set(name, (comment === -1 ? rest : rest.slice(0, comment)).trim());
      continue;
    }
    // A quoted value may go on over the following lines until its closing quote.
    let end = closingQuote(rest, quote);
    let lastLine = index;
    while (end === -1 && lastLine + 1 < lines.length) {
      lastLine++;
      rest += `\n${lines[lastLine]!}`;
      end = closingQuote(rest, quote);
    }
    if (end === -1) {
      problems.push({ line: lineNumber, reason: `the ${quote} quote is never closed` });
      continue;
    }
    const after = rest.slice(end + 1).trim();
    if (after !== "" && !after.startsWith("#")) {
      problems.push({ line: lineNumber, reason: "text after the closing quote" });
      index = lastLine;
      continue;
    }
    const inner = rest.slice(1, end);
    values.set(name, quote === '"' ? unescapeDoubleQuoted(inner) : inner);
    index = lastLine;
  }
  return { values, problems };
}

/** The index of the quote that closes a value starting with `quote` at 0; -1 when there is none. */
function closingQuote(text: string, quote: string): number {
  for (let position = 1; position < text.length; position++) {
    const char = text[position];
    if (quote === '"' && char === "\\") {
      position++;
      continue;
    }
    if (char === quote) return position;
  }
  return -1;
}

function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\(.)/gs, (whole, char: string) => DOUBLE_QUOTED_ESCAPES[char] ?? whole);
}

/** Templates shipped with projects: their values are placeholders, never keys to import. */
const TEMPLATE_SUFFIXES = ["example", "sample", "template", "dist", "defaults", "schema"];
/** Far larger than any dotenv file; a bigger file is skipped rather than read. */
const MAX_DOTENV_BYTES = 1024 * 1024;

/**
 * The dotenv files of `dir`, highest precedence first: `.env.local`, then other `.env.*.local`
 * files, then other `.env.*` files (each group in name order), then `.env`. Templates
 * (`.env.example`, `.env.sample`, ...) are left out.
 */
export function dotenvFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const rank = (name: string) => {
    if (name === ".env.local") return 0;
    if (name.endsWith(".local")) return 1;
    if (name === ".env") return 3;
    return 2;
  };
  return names
    .filter((name) => name === ".env" || name.startsWith(".env."))
    .filter((name) => !TEMPLATE_SUFFIXES.some((suffix) => name.split(".").includes(suffix)))
    .filter((name) => {
      try {
        return statSync(join(dir, name)).isFile();
      } catch {
        return false;
      }
    })
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** Where a value was found: `environment` (the process), or a dotenv file's name. */
export interface EnvSource {
  name: string;
  /** The file's path; absent for the environment. */
  path?: string;
  /** How many variables it assigns. */
  variables: number;
  problems: DotenvProblem[];
  /** Why the file was not read (too large, unreadable). */
  skipped?: string;
}

export interface Occurrence {
  source: string;
  value: string;
}

export interface EnvScan {
  /** Highest precedence first: the environment, then the dotenv files in `dotenvFiles` order. */
  sources: EnvSource[];
  /** Every non-empty variable, with where it was found, highest precedence first. */
  variables: Map<string, Occurrence[]>;
}

/** The value `svc run` gives a child for provider variables: never a key to import. */
export const PROXY_PLACEHOLDER = "svc-proxy-managed";

/**
 * Reads the process environment and the dotenv files of `dir`. Empty values and svc's own
 * placeholder are not counted as found.
 */
export function scanEnvironment(dir: string, env: NodeJS.ProcessEnv): EnvScan {
  const sources: EnvSource[] = [];
  const variables = new Map<string, Occurrence[]>();
  const add = (source: string, values: Iterable<[string, string | undefined]>) => {
    let count = 0;
    for (const [name, raw] of values) {
      const value = raw?.trim();
      if (!value || value === PROXY_PLACEHOLDER) continue;
      count++;
      const found = variables.get(name) ?? [];
      found.push({ source, value });
      variables.set(name, found);
    }
    return count;
  };
  sources.push({ name: "environment", variables: add("environment", Object.entries(env)), problems: [] });
  for (const name of dotenvFiles(dir)) {
    const path = join(dir, name);
    let text: string;
    try {
      if (statSync(path).size > MAX_DOTENV_BYTES) {
        sources.push({ name, path, variables: 0, problems: [], skipped: "larger than 1 MiB" });
        continue;
      }
      text = readFileSync(path, "utf8");
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? "unreadable";
      sources.push({ name, path, variables: 0, problems: [], skipped: reason });
      continue;
    }
    const parsed = parseDotenv(text);
    sources.push({ name, path, variables: add(name, parsed.values), problems: parsed.problems });
  }
  return { sources, variables };
}

/** A provider's key as found: the variable and source that win, and what else was seen. */
export interface FoundKey {
  variable: string;
  source: string;
  value: string;
  /** Other places the provider's variables were set, and whether each holds the same value. */
  others: Array<{ variable: string; source: string; same: boolean }>;
}

/**
 * The key a provider would get from this environment: the first of its variables (`api_key.env_var`
 * first, then `env` in order, as its SDK would look) that is set anywhere; for that variable the
 * process environment wins over `.env.local`, other `.env.*` files, then `.env`. Undefined when none
 * of its variables is set.
 */
export function findKey(scan: EnvScan, variables: readonly string[]): FoundKey | undefined {
  let winner: { variable: string; source: string; value: string } | undefined;
  const seen: Array<{ variable: string; source: string; value: string }> = [];
  for (const variable of new Set(variables)) {
    for (const occurrence of scan.variables.get(variable) ?? []) {
      const entry = { variable, ...occurrence };
      if (!winner) winner = entry;
      else seen.push(entry);
    }
  }
  if (!winner) return undefined;
  const value = winner.value;
  return {
    ...winner,
    others: seen.map(({ variable, source, value: other }) => ({ variable, source, same: other === value })),
  };
}

/** An AWS key pair that cannot be imported as found, and why (never a value). */
export interface BrokenKeyPair {
  variable: string;
  source: string;
  problem: string;
}

/**
 * The AWS key pair a client would get from this environment: AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY from the same place (each variable's winner, as `findKey` picks it), with
 * AWS_SESSION_TOKEN and the region (AWS_REGION, else AWS_DEFAULT_REGION) from that place too. The
 * value is the pair as `svc login aws` takes it pasted (JSON). A pair split across places, or half
 * of one, is reported rather than guessed at: two places may hold two different identities.
 */
export function findAwsKeyPair(scan: EnvScan): FoundKey | BrokenKeyPair | undefined {
  const id = findKey(scan, ["AWS_ACCESS_KEY_ID"]);
  const secret = findKey(scan, ["AWS_SECRET_ACCESS_KEY"]);
  if (!id && !secret) return undefined;
  if (!id || !secret) {
    const half = (id ?? secret)!;
    const missing = id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID";
    return {
      variable: half.variable,
      source: half.source,
      problem: `${half.variable} in ${half.source} has no ${missing}; an AWS key is the pair of both`,
    };
  }
  if (id.source !== secret.source) {
    return {
      variable: id.variable,
      source: id.source,
      problem: `AWS_ACCESS_KEY_ID counts from ${id.source} but AWS_SECRET_ACCESS_KEY from ${secret.source}; keep the pair in one place`,
    };
  }
  const besideId = (variable: string) =>
    scan.variables.get(variable)?.find((occurrence) => occurrence.source === id.source)?.value;
  const sessionToken = besideId("AWS_SESSION_TOKEN");
  const region = besideId("AWS_REGION") ?? besideId("AWS_DEFAULT_REGION");
  return {
    ...id,
    value: JSON.stringify({
      access_key_id: id.value,
      secret_access_key: secret.value,
      ...(sessionToken ? { session_token: sessionToken } : {}),
      ...(region ? { region } : {}),
    }),
  };
}
