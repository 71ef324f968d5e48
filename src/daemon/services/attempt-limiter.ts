/**
 * Counts failed attempts per key (an email, a client address) in a sliding window. A key with
 * `max` failures in `windowMs` is refused until its oldest failure leaves the window.
 * Memory only: each replica counts its own (hosted mode moves this to Redis).
 */
export class AttemptLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #failures = new Map<string, number[]>();

  constructor(options: { max: number; windowMs: number }) {
    this.#max = options.max;
    this.#windowMs = options.windowMs;
  }

  /** Seconds until `key` may try again; 0 when it may now. */
  retryAfter(key: string, now: Date): number {
    const recent = this.#recent(key, now.getTime());
    if (recent.length < this.#max) return 0;
    return Math.max(1, Math.ceil((recent[0]! + this.#windowMs - now.getTime()) / 1000));
  }

  fail(key: string, now: Date): void {
    const recent = this.#recent(key, now.getTime());
    recent.push(now.getTime());
    this.#failures.set(key, recent);
    if (this.#failures.size > 10_000) this.#sweep(now.getTime());
  }

  reset(key: string): void {
    this.#failures.delete(key);
  }

  #recent(key: string, nowMs: number): number[] {
    const all = this.#failures.get(key) ?? [];
    const recent = all.filter((at) => at > nowMs - this.#windowMs);
    if (recent.length === 0) this.#failures.delete(key);
    return recent;
  }

  #sweep(nowMs: number): void {
    for (const key of this.#failures.keys()) this.#recent(key, nowMs);
  }
}
