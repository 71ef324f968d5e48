import type { RuntimeState } from "../../store/runtime-state.ts";

/** An attempt let through (its reservation can be given back), or refused for `retryAfter` seconds. */
export type AttemptReservation =
  | { granted: true; release(): Promise<void> }
  | { granted: false; retryAfter: number };

/**
 * Counts attempts per key (an email, a client address) in a sliding window. An attempt is
 * reserved before the slow check it guards (a password hash), atomically, so N parallel attempts
 * reach the check at most `max` times; an attempt that turns out not to count (a sign-in that
 * succeeded) is released. A key with `max` attempts in `windowMs` is refused until its oldest
 * leaves the window. The counts live in the runtime state, so replicas count together.
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

  async reserve(key: string, now: Date): Promise<AttemptReservation> {
    const stateKey = this.#key(key);
    const id = await this.#state.reserveEvent(stateKey, now.getTime(), this.#windowMs, this.#max);
    if (id !== undefined) return { granted: true, release: () => this.#state.removeEvent(stateKey, id) };
    return { granted: false, retryAfter: await this.#retryAfter(stateKey, now) };
  }

  /** Seconds until one more attempt fits: the (length - max + 1)th newest must leave the window. */
  async #retryAfter(stateKey: string, now: Date): Promise<number> {
    const recent = await this.#state.events(stateKey, now.getTime(), this.#windowMs);
    const oldestThatCounts = recent[Math.max(0, recent.length - this.#max)] ?? now.getTime();
    return Math.max(1, Math.ceil((oldestThatCounts + this.#windowMs - now.getTime()) / 1000));
  }

  async reset(key: string): Promise<void> {
    await this.#state.delete(this.#key(key));
  }
}
