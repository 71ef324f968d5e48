import { spawnSync } from "node:child_process";
import { hkdfSync, randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensurePrivateDir } from "../core/secure-fs.ts";

/**
 * Master key resolution: where the 32-byte secret that protects the vault comes from.
 *
 * Sources, in order of precedence:
 *  1. `SVC_MASTER_KEY` (source `env`). If the value is standard padded base64 of exactly 32 bytes
 *     (the format of `server/master.key`, of the keyring entry, and of `openssl rand -base64 32`)
 *     those bytes are the key, so a key can be moved from the key file or keyring into the
 *     environment unchanged. Any other string of at least 32 characters is used as input keying
 *     material: key = HKDF-SHA256(ikm = UTF-8 bytes, salt = empty, info = "svc/master-key/env/v1").
 *     There is no password stretching, hence the 32-character minimum.
 *  2. `SVC_MASTER_KEY_FILE` (source `local_key`): an existing file in the key-file format
 *     (base64 of 32 bytes, surrounding whitespace ignored). It is never created or rewritten.
 *  3. `SVC_ENCRYPTION_MODE` = `keyring` | `local_key` | `auto` (default), see `resolveMasterKey`.
 *
 * Invariant callers can rely on: `secret` is set exactly when `issues` is empty. Nothing here ever
 * overwrites an existing key, and the secret never appears in a warning, an issue or an error.
 */

export const MASTER_KEY_BYTES = 32;
export const ENCRYPTION_MODES = ["auto", "local_key", "keyring"] as const;
export type EncryptionMode = (typeof ENCRYPTION_MODES)[number];
export type MasterKeySource = "env" | "keyring" | "local_key";

export interface MasterKeyEnv {
  SVC_MASTER_KEY?: string;
  SVC_MASTER_KEY_FILE?: string;
  SVC_ENCRYPTION_MODE?: string;
}

export interface KeyringAvailability {
  available: boolean;
  reason?: string;
}

/**
 * One entry in a credential store. `read` returns undefined when there is no entry and throws when
 * the store cannot be read; `write` throws when the store refuses the value.
 */
export interface KeyringAccess {
  read(): string | undefined;
  write(value: string): void;
  availability(): KeyringAvailability;
  /** Human-readable name used in `backend`, e.g. "OS keyring (service svc)". */
  readonly description?: string;
}

export interface MasterKeyResolution {
  /** 32 bytes of key material; present exactly when `issues` is empty. */
  secret?: Buffer;
  configuredMode: EncryptionMode;
  effectiveSource?: MasterKeySource;
  /** Where the key came from (or was looked for), for humans: never contains the key. */
  backend: string;
  /** Observations made while resolving; see `masterKeyWarnings` for the current list. */
  warnings: string[];
  /** The key file in use (source `local_key`): its mode is checked afresh on every readiness call. */
  keyFile?: string;
  /** Reasons no key could be resolved; each is actionable. */
  issues: string[];
}

export interface ResolveMasterKeyOptions {
  env: MasterKeyEnv;
  /** Usually `homeLayout(home).masterKey` (`<home>/server/master.key`). */
  localKeyPath: string;
  keyring: KeyringAccess;
}

const ENV_BACKEND = "environment variable SVC_MASTER_KEY";
const KEYRING_LOCK_WAIT_MS = 15_000;
const KEYRING_LOCK_STALE_MS = 60_000;

/**
 * Resolves the master key. Mode `auto`: an existing keyring entry, else an existing local key file,
 * else a new key in the keyring if it is available, else a new local key file (with a warning). So
 * an existing key is never abandoned for a new one. Mode `local_key`: the local key file, created
 * if absent. Mode `keyring`: the keyring only, the entry created if absent.
 */
export async function resolveMasterKey(options: ResolveMasterKeyOptions): Promise<MasterKeyResolution> {
  const { env, keyring } = options;
  const localKeyPath = resolve(options.localKeyPath);
  const warnings: string[] = [];
  const rawMode = env.SVC_ENCRYPTION_MODE?.trim().toLowerCase() || "auto";
  const modeIsKnown = (ENCRYPTION_MODES as readonly string[]).includes(rawMode);
  const configuredMode: EncryptionMode = modeIsKnown ? (rawMode as EncryptionMode) : "auto";

  const fail = (backend: string, ...issues: string[]): MasterKeyResolution => ({
    configuredMode,
    backend,
    warnings,
    issues,
  });
  const succeed = (
    secret: Buffer,
    effectiveSource: MasterKeySource,
    backend: string,
    keyFile?: string,
  ): MasterKeyResolution => ({
    secret,
    configuredMode,
    effectiveSource,
    backend,
    keyFile,
    warnings,
    issues: [],
  });

  if (!modeIsKnown) {
    const shown = JSON.stringify((env.SVC_ENCRYPTION_MODE ?? "").slice(0, 40));
    return fail("none", `SVC_ENCRYPTION_MODE=${shown} is not one of auto, local_key, keyring`);
  }

  if (env.SVC_MASTER_KEY !== undefined) {
    if (env.SVC_MASTER_KEY_FILE) warnings.push("SVC_MASTER_KEY is set, so SVC_MASTER_KEY_FILE is ignored");
    if (configuredMode !== "auto") {
      warnings.push(`SVC_MASTER_KEY is set, so SVC_ENCRYPTION_MODE=${configuredMode} is ignored`);
    }
    const value = env.SVC_MASTER_KEY;
    if ([...value].length < 32) {
      return fail(
        ENV_BACKEND,
        "SVC_MASTER_KEY must be at least 32 characters (for example the output of `openssl rand -base64 32`)",
      );
    }
    return succeed(secretFromEnvValue(value), "env", ENV_BACKEND);
  }

  if (env.SVC_MASTER_KEY_FILE) {
    const path = resolve(env.SVC_MASTER_KEY_FILE);
    const backend = `key file ${path}`;
    if (configuredMode !== "auto") {
      warnings.push(`SVC_MASTER_KEY_FILE is set, so SVC_ENCRYPTION_MODE=${configuredMode} is ignored`);
    }
    const read = readKeyFile(path, "SVC_MASTER_KEY_FILE");
    if ("issue" in read) return fail(backend, read.issue);
    return succeed(read.secret, "local_key", backend, path);
  }

  const localBackend = `key file ${localKeyPath}`;
  const keyringBackend = keyring.description ?? "OS keyring";

  if (configuredMode === "local_key") {
    const result = await loadOrCreateKeyFile(localKeyPath);
    if ("issue" in result) return fail(localBackend, result.issue);
    return succeed(result.secret, "local_key", localBackend, localKeyPath);
  }

  const availability = probeKeyring(keyring);

  if (configuredMode === "keyring") {
    if (!availability.available) {
      return fail(
        keyringBackend,
        `OS keyring unavailable: ${availability.reason ?? "unknown reason"}; set SVC_ENCRYPTION_MODE=local_key or SVC_MASTER_KEY`,
      );
    }
    const existing = readKeyringEntry(keyring, keyringBackend);
    if ("issue" in existing) return fail(keyringBackend, existing.issue);
    if (existing.secret) return succeed(existing.secret, "keyring", keyringBackend);
    const created = await createKeyringEntry(keyring, keyringBackend, `${localKeyPath}.keyring-lock`);
    if ("issue" in created) return fail(keyringBackend, created.issue);
    return succeed(created.secret, "keyring", keyringBackend);
  }

  // auto
  const localExists = pathExists(localKeyPath);
  if (availability.available) {
    const existing = readKeyringEntry(keyring, keyringBackend);
    if ("issue" in existing) return fail(keyringBackend, existing.issue);
    if (existing.secret) {
      if (localExists) {
        warnings.push(
          `both ${keyringBackend} and local key file ${localKeyPath} hold a master key; using the keyring (set SVC_ENCRYPTION_MODE=local_key to use the file)`,
        );
      }
      return succeed(existing.secret, "keyring", keyringBackend);
    }
  }
  if (localExists) {
    const result = await loadOrCreateKeyFile(localKeyPath);
    if ("issue" in result) return fail(localBackend, result.issue);
    return succeed(result.secret, "local_key", localBackend, localKeyPath);
  }
  if (availability.available) {
    const created = await createKeyringEntry(keyring, keyringBackend, `${localKeyPath}.keyring-lock`);
    if ("issue" in created) return fail(keyringBackend, created.issue);
    return succeed(created.secret, "keyring", keyringBackend);
  }
  const result = await loadOrCreateKeyFile(localKeyPath);
  if ("issue" in result) return fail(localBackend, result.issue);
  warnings.push(
    `OS keyring unavailable (${availability.reason ?? "unknown reason"}); using local key file ${localKeyPath}`,
  );
  return succeed(result.secret, "local_key", localBackend, localKeyPath);
}

// ---------------------------------------------------------------------------------------------
// Key material formats

/** Standard padded base64 of exactly 32 bytes, canonical (so no two spellings of one key). */
function decodeKeyText(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]{43}=$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64");
  if (bytes.length !== MASTER_KEY_BYTES || bytes.toString("base64") !== text) return undefined;
  return bytes;
}

function encodeKeyText(secret: Buffer): string {
  return secret.toString("base64");
}

function secretFromEnvValue(value: string): Buffer {
  const decoded = decodeKeyText(value);
  if (decoded) return decoded;
  return Buffer.from(
    hkdfSync(
      "sha256",
      Buffer.from(value, "utf8"),
      Buffer.alloc(0),
      "svc/master-key/env/v1",
      MASTER_KEY_BYTES,
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Local key file

type KeyResult = { secret: Buffer } | { issue: string };

function pathExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    // Exists but cannot be inspected: treat as existing so the read reports the real problem.
    return true;
  }
}

/** The resolution's warnings plus the key file's mode as it is now (a chmod since start counts). */
export function masterKeyWarnings(resolution: MasterKeyResolution): string[] {
  const modeWarning = resolution.keyFile ? keyFileModeWarning(resolution.keyFile) : undefined;
  return modeWarning ? [...resolution.warnings, modeWarning] : [...resolution.warnings];
}

export function keyFileModeWarning(path: string): string | undefined {
  if (process.platform === "win32") return undefined;
  try {
    const mode = statSync(path).mode & 0o777;
    if ((mode & ~0o600) === 0) return undefined;
    return `master key file ${path} has mode 0${mode.toString(8).padStart(3, "0")}; run chmod 600 ${path}`;
  } catch {
    return undefined;
  }
}

/** Reads an existing key file; any problem is an issue, and the file is never modified. */
function readKeyFile(path: string, label: string): KeyResult {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT") return { issue: `${label} ${path} does not exist` };
    return { issue: `cannot read master key file ${path} (${code ?? "error"})` };
  }
  const secret = decodeKeyText(text.trim());
  if (!secret) {
    return {
      issue: `master key file ${path} does not hold a base64-encoded 32-byte key; it was left untouched (restore it from a backup, or move it away to start a new, empty vault)`,
    };
  }
  return { secret };
}

/**
 * Reads the local key file, creating it if absent. Creation is atomic and exclusive: the key is
 * written and fsynced to a private temporary file which is then hard-linked into place, so the
 * file appears complete or not at all, and of two concurrent creators exactly one wins; the loser
 * reads the winner's key.
 */
async function loadOrCreateKeyFile(path: string): Promise<KeyResult> {
  if (pathExists(path)) return readKeyFile(path, "master key file");
  try {
    ensurePrivateDir(dirname(path));
  } catch (error) {
    return {
      issue: `cannot create directory ${dirname(path)} for the master key (${errorCode(error) ?? "error"})`,
    };
  }
  const content = `${encodeKeyText(randomBytes(MASTER_KEY_BYTES))}\n`;
  try {
    createFileExclusive(path, content);
  } catch (error) {
    if (errorCode(error) !== "EEXIST") {
      return { issue: `cannot create master key file ${path} (${errorCode(error) ?? "error"})` };
    }
    // Lost the race: another process created the key first. Use theirs. (Only the non-link
    // fallback can expose an empty file for an instant, so allow the winner a moment to finish.)
    for (let attempt = 0; attempt < 20; attempt++) {
      const result = readKeyFile(path, "master key file");
      if ("secret" in result) return result;
      await sleep(50);
    }
    return readKeyFile(path, "master key file");
  }
  return readKeyFile(path, "master key file");
}

function createFileExclusive(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  writeDurably(temporary, content, "wx");
  try {
    try {
      linkSync(temporary, path);
    } catch (error) {
      const code = errorCode(error);
      if (code === "EEXIST") throw error;
      // File systems without hard links: fall back to O_EXCL create (still exclusive).
      writeDurably(path, content, "wx");
    }
  } finally {
    rmSync(temporary, { force: true });
  }
  try {
    const dir = openSync(dirname(path), "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch {
    // Directory fsync is best effort (unsupported on some platforms).
  }
}

function writeDurably(path: string, content: string, flag: string): void {
  const fd = openSync(path, flag, 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// Keyring

function probeKeyring(keyring: KeyringAccess): KeyringAvailability {
  try {
    return keyring.availability();
  } catch (error) {
    return { available: false, reason: describeError(error) };
  }
}

function readKeyringEntry(keyring: KeyringAccess, backend: string): { secret?: Buffer } | { issue: string } {
  let value: string | undefined;
  try {
    value = keyring.read();
  } catch (error) {
    return {
      issue: `${backend} could not be read: ${describeError(error)}; unlock it, or set SVC_ENCRYPTION_MODE=local_key or SVC_MASTER_KEY`,
    };
  }
  if (value === undefined) return {};
  const secret = decodeKeyText(value.trim());
  if (!secret) {
    return {
      issue: `${backend} holds an svc master key entry that is not a base64-encoded 32-byte key; it was left untouched`,
    };
  }
  return { secret };
}

/**
 * Creates the keyring entry. A keyring has no create-if-absent, so creators on this machine are
 * serialised by an exclusive lock file next to the local key, and the key is read back after writing.
 */
async function createKeyringEntry(
  keyring: KeyringAccess,
  backend: string,
  lockPath: string,
): Promise<{ secret: Buffer } | { issue: string }> {
  try {
    ensurePrivateDir(dirname(lockPath));
  } catch (error) {
    return { issue: `cannot create directory ${dirname(lockPath)} (${errorCode(error) ?? "error"})` };
  }
  const deadline = Date.now() + KEYRING_LOCK_WAIT_MS;
  for (;;) {
    try {
      writeFileSync(lockPath, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
      break;
    } catch (error) {
      if (errorCode(error) !== "EEXIST") {
        return { issue: `cannot create lock file ${lockPath} (${errorCode(error) ?? "error"})` };
      }
    }
    // Someone else is creating the key: it may already be there.
    const existing = readKeyringEntry(keyring, backend);
    if ("issue" in existing) return existing;
    if (existing.secret) return { secret: existing.secret };
    try {
      if (Date.now() - statSync(lockPath).mtimeMs > KEYRING_LOCK_STALE_MS) unlinkSync(lockPath);
    } catch {
      // Lock vanished meanwhile: retry.
    }
    if (Date.now() > deadline) {
      return {
        issue: `timed out waiting for lock file ${lockPath} while creating the master key in ${backend}`,
      };
    }
    await sleep(50);
  }
  try {
    const existing = readKeyringEntry(keyring, backend);
    if ("issue" in existing) return existing;
    if (existing.secret) return { secret: existing.secret };
    const secret = randomBytes(MASTER_KEY_BYTES);
    try {
      keyring.write(encodeKeyText(secret));
    } catch (error) {
      return {
        issue: `could not store a new master key in ${backend}: ${describeError(error)}; set SVC_ENCRYPTION_MODE=local_key or SVC_MASTER_KEY`,
      };
    }
    const stored = readKeyringEntry(keyring, backend);
    if ("issue" in stored) return stored;
    if (!stored.secret?.equals(secret)) {
      return { issue: `${backend} did not return the master key just stored in it; nothing was used` };
    }
    return { secret };
  } finally {
    rmSync(lockPath, { force: true });
  }
}

export interface OsKeyringOptions {
  /** Upper bound for the availability probe. Default 5 s. */
  probeTimeoutMs?: number;
  /** Upper bound for a read or write (a locked keyring may prompt for unlock). Default 30 s. */
  timeoutMs?: number;
  /** Override the module to load (tests). Default: resolved `@napi-rs/keyring`. */
  modulePath?: string;
}

/**
 * Runs in a child Node process: the native keyring module is never loaded into the daemon, and a
 * D-Bus call that blocks (no session bus, locked collection) cannot hang the caller past the
 * timeout. The secret for `write` travels over stdin, never argv. On Linux the entry is pinned to
 * the Secret Service: the library's default silently falls back to the kernel keyutils store,
 * which is memory-only and would lose the master key at reboot.
 */
const KEYRING_CHILD_SCRIPT = `
const [modulePath, op, service, account] = process.argv.slice(1);
let out;
try {
  const { Entry } = require(modulePath);
  const entry = process.platform === "linux"
    ? new Entry(service, account, { linux: { store: "secret-service" } })
    : new Entry(service, account);
  if (op === "probe") out = { ok: true };
  else if (op === "read") { const v = entry.getPassword(); out = { ok: true, value: v == null ? null : v }; }
  else if (op === "write") { entry.setPassword(require("node:fs").readFileSync(0, "utf8")); out = { ok: true }; }
  else out = { ok: false, error: "unknown operation" };
} catch (e) {
  out = { ok: false, error: String((e && e.message) || e) };
}
process.stdout.write(JSON.stringify(out));
`;

/** The OS credential store (macOS Keychain, Windows Credential Manager, Linux Secret Service). */
export function osKeyring(
  service = "svc",
  account = "master-key",
  options: OsKeyringOptions = {},
): KeyringAccess {
  const probeTimeoutMs = options.probeTimeoutMs ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  let availability: KeyringAvailability | undefined;

  const modulePath = (): string => {
    if (options.modulePath) return options.modulePath;
    return createRequire(import.meta.url).resolve("@napi-rs/keyring");
  };

  const run = (
    op: "probe" | "read" | "write",
    timeout: number,
    input?: string,
  ): { value?: string | null } => {
    let path: string;
    try {
      path = modulePath();
    } catch {
      throw new Error("optional dependency @napi-rs/keyring is not installed");
    }
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const result = spawnSync(
      process.execPath,
      ["--input-type=commonjs", "-e", KEYRING_CHILD_SCRIPT, path, op, service, account],
      { input: input ?? "", timeout, killSignal: "SIGKILL", encoding: "utf8", env, windowsHide: true },
    );
    if (result.error) {
      if (errorCode(result.error) === "ETIMEDOUT")
        throw new Error(`keyring did not answer within ${timeout} ms`);
      throw new Error(`keyring helper failed (${errorCode(result.error) ?? result.error.message})`);
    }
    let parsed: { ok?: boolean; value?: string | null; error?: string };
    try {
      parsed = JSON.parse(result.stdout);
    } catch {
      const detail = result.signal ? `signal ${result.signal}` : `exit code ${result.status}`;
      throw new Error(`keyring helper failed (${detail})`);
    }
    if (!parsed.ok) throw new Error(parsed.error || "keyring error");
    return parsed;
  };

  const probe = (): KeyringAvailability => {
    if (!availability) {
      try {
        run("probe", probeTimeoutMs);
        availability = { available: true };
      } catch (error) {
        availability = { available: false, reason: describeError(error) };
      }
    }
    return availability;
  };
  const requireAvailable = (): void => {
    const state = probe();
    if (!state.available) throw new Error(state.reason ?? "OS keyring unavailable");
  };

  return {
    description: `OS keyring (service ${service})`,
    availability: probe,
    read() {
      requireAvailable();
      const { value } = run("read", timeoutMs);
      return typeof value === "string" ? value : undefined;
    },
    write(value: string) {
      requireAvailable();
      run("write", timeoutMs, value);
    },
  };
}

/** A keyring that is never available (tests, or to disable the keyring explicitly). */
export function noKeyring(reason: string): KeyringAccess {
  return {
    description: "OS keyring",
    availability: () => ({ available: false, reason }),
    read() {
      throw new Error(`OS keyring unavailable: ${reason}`);
    },
    write() {
      throw new Error(`OS keyring unavailable: ${reason}`);
    },
  };
}

/** An in-memory keyring (tests). `value` is the stored entry; `writes` counts writes. */
export function memoryKeyring(
  initial?: string,
): KeyringAccess & { value: string | undefined; writes: number } {
  const keyring = {
    description: "memory keyring",
    value: initial,
    writes: 0,
    availability: () => ({ available: true }),
    read: () => keyring.value,
    write(value: string) {
      keyring.writes++;
      keyring.value = value;
    },
  };
  return keyring;
}

function errorCode(error: unknown): string | undefined {
  return error && typeof error === "object" && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;
}

function describeError(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.trim().split("\n")[0]!.slice(0, 300) || "unknown error";
}
