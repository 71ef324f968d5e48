import { createHash, randomBytes } from "node:crypto";
import type { RuntimeState } from "../../store/runtime-state.ts";

interface Entry<T> {
  value: T;
  expiresAt: number;
}

const digest = (token: string) => createHash("sha256").update(token).digest("base64url");

/**
 * Short-lived, single-use tokens (dashboard links, identity claims) held in the runtime state by
 * their hash, so the state never holds a usable link, and a link issued by one replica opens on
 * any other. `kind` keeps each sort of token in its own key space.
 */
export class OneTimeTokens<T> {
  readonly #state: RuntimeState;
  readonly #kind: string;
  readonly #ttlMs: number;
  readonly #now: () => Date;

  constructor(options: { state: RuntimeState; kind: string; ttlMs: number; now: () => Date }) {
    this.#state = options.state;
    this.#kind = options.kind;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now;
  }

  #key(token: string): string {
    return `${this.#kind}:${digest(token)}`;
  }

  async issue(value: T): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString("base64url");
    const expiresAt = this.#now().getTime() + this.#ttlMs;
    const entry: Entry<T> = { value, expiresAt };
    await this.#state.set(this.#key(token), JSON.stringify(entry), this.#ttlMs);
    return { token, expiresAt: new Date(expiresAt) };
  }

  #valid(raw: string | undefined): { value: T; expiresAt: Date } | undefined {
    if (raw === undefined) return undefined;
    const entry = JSON.parse(raw) as Entry<T>;
    // The state's own expiry may run on another clock; the daemon's decides.
    if (entry.expiresAt <= this.#now().getTime()) return undefined;
    return { value: entry.value, expiresAt: new Date(entry.expiresAt) };
  }

  /** The token's value while it is valid, without using it up. */
  async peek(token: string): Promise<{ value: T; expiresAt: Date } | undefined> {
    return this.#valid(await this.#state.get(this.#key(token)));
  }

  /** The token's value, once: the token stops working, on every replica. */
  async take(token: string): Promise<T | undefined> {
    return this.#valid(await this.#state.take(this.#key(token)))?.value;
  }
}
