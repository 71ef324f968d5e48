import type { KeyObject } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { InvalidInputError, NotFoundError } from "../core/errors.ts";
import { ensurePrivateDir, writePrivateFile } from "../core/secure-fs.ts";
import { generateHandle, isValidHandle, type RandomInt } from "./handle.ts";
import {
  generateIdentityKeyPair,
  identityKeyPairFromPrivateKey,
  privateKeyFromPem,
  privateKeyToPem,
} from "./keypair.ts";

/** An identity this machine holds the private key of. */
export interface LocalIdentity {
  handle: string;
  did: string;
  /** ISO-8601 creation time, as stored in `<handle>.json`. */
  createdAt: string;
  privateKey: KeyObject;
}

/** The public description stored beside each key as `<handle>.json`. */
export interface IdentityMetadata {
  handle: string;
  did: string;
  created_at: string;
}

export interface IdentityFilesOptions {
  /** Randomness for generated handles; defaults to `crypto.randomInt`. */
  randomInt?: RandomInt;
  /** The clock for `created_at`; defaults to the system clock. */
  now?: () => Date;
}

const KEY_SUFFIX = ".key";
const METADATA_SUFFIX = ".json";
/** How many generated handles to try before giving up (a collision is ~1 in 37 million). */
const GENERATE_ATTEMPTS = 32;

/**
 * The identities kept in one directory (`~/.svc/client/identities`): `<handle>.key` holds the
 * PKCS#8 PEM private key (mode 0600, created exclusively, so two processes cannot both claim a
 * handle) and `<handle>.json` holds `{handle, did, created_at}`. The directory is mode 0700.
 */
export class IdentityFiles {
  readonly directory: string;
  readonly #randomInt: RandomInt | undefined;
  readonly #now: () => Date;

  constructor(directory: string, options: IdentityFilesOptions = {}) {
    this.directory = directory;
    this.#randomInt = options.randomInt;
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * Creates a new identity under `handle`, or under a fresh generated handle when none is given.
   * Throws InvalidInputError for an invalid handle or one that is already taken.
   */
  create(handle?: string): LocalIdentity {
    ensurePrivateDir(this.directory);
    if (handle !== undefined) {
      assertHandle(handle);
      if (this.exists(handle)) throw new InvalidInputError(`An identity named '${handle}' already exists.`);
      const created = this.#tryCreate(handle);
      if (!created) throw new InvalidInputError(`An identity named '${handle}' already exists.`);
      return created;
    }
    for (let attempt = 0; attempt < GENERATE_ATTEMPTS; attempt++) {
      const candidate = generateHandle(this.#randomInt);
      if (this.exists(candidate)) continue;
      const created = this.#tryCreate(candidate);
      if (created) return created;
    }
    throw new InvalidInputError("Could not find a free identity handle; pass one explicitly.");
  }

  /** Loads an identity. Throws InvalidInputError for a bad handle, NotFoundError for a missing one. */
  load(handle: string): LocalIdentity {
    assertHandle(handle);
    const pem = readIfExists(this.keyFilePath(handle));
    const metadataText = readIfExists(this.metadataFilePath(handle));
    if (pem === undefined || metadataText === undefined) {
      throw new NotFoundError(`No identity named '${handle}' in ${this.directory}.`);
    }
    const { privateKey, did } = identityKeyPairFromPrivateKey(privateKeyFromPem(pem));
    const metadata = parseMetadata(metadataText, handle);
    if (metadata.did !== did) {
      throw new InvalidInputError(`The identity '${handle}' is damaged: its key does not match its DID.`);
    }
    return { handle, did, createdAt: metadata.created_at, privateKey };
  }

  /** The handles of complete identities (both files present), sorted. Empty if the directory is missing. */
  list(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.directory);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return [];
      throw error;
    }
    const present = new Set(names);
    return names
      .filter((name) => name.endsWith(KEY_SUFFIX))
      .map((name) => name.slice(0, -KEY_SUFFIX.length))
      .filter((handle) => isValidHandle(handle) && present.has(handle + METADATA_SUFFIX))
      .sort();
  }

  /** Whether `handle` is taken: either of its files exists (even a half-created identity). */
  exists(handle: string): boolean {
    if (!isValidHandle(handle)) return false;
    return existsSync(this.keyFilePath(handle)) || existsSync(this.metadataFilePath(handle));
  }

  /**
   * The permission bits of the key file (e.g. `0o600`). `load` accepts a wider mode; callers can use
   * this to warn (`(mode & 0o077) !== 0` means group or others can read it).
   */
  keyFileMode(handle: string): number {
    assertHandle(handle);
    try {
      return statSync(this.keyFilePath(handle)).mode & 0o777;
    } catch (error) {
      if (errorCode(error) === "ENOENT")
        throw new NotFoundError(`No identity named '${handle}' in ${this.directory}.`);
      throw error;
    }
  }

  keyFilePath(handle: string): string {
    assertHandle(handle);
    return join(this.directory, handle + KEY_SUFFIX);
  }

  metadataFilePath(handle: string): string {
    assertHandle(handle);
    return join(this.directory, handle + METADATA_SUFFIX);
  }

  /** Claims `handle` by creating its key file exclusively; undefined if someone else got there first. */
  #tryCreate(handle: string): LocalIdentity | undefined {
    const { privateKey, did } = generateIdentityKeyPair();
    try {
      writePrivateFile(this.keyFilePath(handle), privateKeyToPem(privateKey), { exclusive: true });
    } catch (error) {
      if (errorCode(error) === "EEXIST") return undefined;
      throw error;
    }
    const createdAt = this.#now().toISOString();
    const metadata: IdentityMetadata = { handle, did, created_at: createdAt };
    writePrivateFile(this.metadataFilePath(handle), `${JSON.stringify(metadata, null, 2)}\n`);
    return { handle, did, createdAt, privateKey };
  }
}

function assertHandle(handle: string): void {
  if (!isValidHandle(handle)) {
    throw new InvalidInputError(
      "An identity handle is 3-64 characters of lowercase letters, digits and hyphens, starting with a letter.",
    );
  }
}

function parseMetadata(text: string, handle: string): IdentityMetadata {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidInputError(`The identity '${handle}' is damaged: its .json file is not JSON.`);
  }
  const record = value && typeof value === "object" ? (value as Record<string, unknown>) : {};
  if (record.handle !== handle || typeof record.did !== "string" || typeof record.created_at !== "string") {
    throw new InvalidInputError(
      `The identity '${handle}' is damaged: its .json file lacks handle, did or created_at.`,
    );
  }
  return { handle, did: record.did, created_at: record.created_at };
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

function errorCode(error: unknown): unknown {
  return error && typeof error === "object" ? (error as { code?: unknown }).code : undefined;
}
