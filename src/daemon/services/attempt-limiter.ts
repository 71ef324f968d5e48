import type { RuntimeState } from "../../store/runtime-state.ts";

/**
 * Counts failed attempts per key (an email, a client address) in a sliding window. A key with
 * `max` failures in `windowMs` is refused until its oldest failure leaves the window. The
 * counts live in the runtime state, so replicas count together: spreading attempts over
 * replicas does not multiply the allowance.
 */
export class AttemptLimiter {
  readonly #state: RuntimeState;
  readonly #kind: string;
  readonly #max: number;
  readonly #windowMs: number;

  constructor(state: RuntimeState, options: { kind: string; max: number; windowMs: number }) {
    this.#state = state;
    this.#kind = options.kind;
    this.#max = options.max;
    this.#windowMs = options.windowMs;
  }

  #key(key: string): string {
    return `attempts:${this.#kind}:${key}`;
  }

  /** Seconds until `key` may try again; 0 when it may now. */
  async retryAfter(key: string, now: Date): Promise<number> {
    const recent = await this.#state.events(this.#key(key), now.getTime(), this.#windowMs);
    if (recent.length < this.#max) return 0;
    // The (length - max + 1)th newest failure must leave the window before one more is allowed.
    const oldestThatCounts = recent[recent.length - this.#max]!;
    return Math.max(1, Math.ceil((oldestThatCounts + this.#windowMs - now.getTime()) / 1000));
  }

  async fail(key: string, now: Date): Promise<void> {
    await this.#state.addEvent(this.#key(key), now.getTime(), this.#windowMs);
  }

  async reset(key: string): Promise<void> {
    await this.#state.delete(this.#key(key));
  }
}
