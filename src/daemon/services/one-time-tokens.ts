import { createHash, randomBytes } from "node:crypto";

interface Entry<T> {
  value: T;
  expiresAt: number;
}

const digest = (token: string) => createHash("sha256").update(token).digest("base64url");

/**
 * Short-lived, single-use tokens (dashboard links, identity claims) held in memory by their
 * hash. At most `capacity` are outstanding; issuing more forgets the oldest, so anonymous
 * callers cannot grow the map without bound.
 */
export class OneTimeTokens<T> {
  readonly #ttlMs: number;
  readonly #capacity: number;
  readonly #now: () => Date;
  readonly #entries = new Map<string, Entry<T>>();

  constructor(options: { ttlMs: number; capacity: number; now: () => Date }) {
    this.#ttlMs = options.ttlMs;
    this.#capacity = options.capacity;
    this.#now = options.now;
  }

  issue(value: T): { token: string; expiresAt: Date } {
    const token = randomBytes(32).toString("base64url");
    const expiresAt = this.#now().getTime() + this.#ttlMs;
    this.#entries.set(digest(token), { value, expiresAt });
    if (this.#entries.size > this.#capacity) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    return { token, expiresAt: new Date(expiresAt) };
  }

  /** The token's value while it is valid, without using it up. */
  peek(token: string): { value: T; expiresAt: Date } | undefined {
    const key = digest(token);
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now().getTime()) {
      this.#entries.delete(key);
      return undefined;
    }
    return { value: entry.value, expiresAt: new Date(entry.expiresAt) };
  }

  /** The token's value, once: the token stops working. */
  take(token: string): T | undefined {
    const found = this.peek(token);
    this.#entries.delete(digest(token));
    return found?.value;
  }
}
