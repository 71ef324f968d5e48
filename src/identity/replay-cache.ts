/**
 * Remembers PoP token ids until they expire, so each token is accepted once.
 * `remember` resolves true the first time it sees `jti`, and false if it has already seen it and the
 * entry has not yet expired (or if it cannot take the entry; see MemoryReplayCache). An implementation
 * must keep an entry at least until `expiresAtSeconds`, and must decide check-and-insert atomically.
 */
export interface ReplayCache {
  remember(jti: string, expiresAtSeconds: number): Promise<boolean>;
}

export interface MemoryReplayCacheOptions {
  /** Hard cap on remembered ids. Default 100 000. */
  maxEntries?: number;
  /** Sweep expired entries after this many inserts. Default 1 000. */
  sweepEvery?: number;
  /**
   * Entries are kept this long past their `exp`, so a verifier whose clock reads a little behind
   * this cache's can never see a token still valid while its id is already forgotten. Default 30.
   */
  graceSeconds?: number;
  /** The clock, in seconds since the epoch; defaults to the system clock. */
  nowSeconds?: () => number;
}

/**
 * An in-memory ReplayCache: a Map from id to expiry. Expired entries are swept lazily (every
 * `sweepEvery` inserts, and whenever the cap is reached); there are no timers, so it never keeps a
 * process alive. When the cap is reached and a sweep frees nothing, new ids are refused (false)
 * rather than old ones forgotten: forgetting a seen id would let its token be replayed, while
 * refusing only fails requests until entries expire (at most a minute, as tokens live ≤ 60 s).
 * Only tokens that are otherwise valid reach the cache, so filling it takes a valid signing key.
 */
export class MemoryReplayCache implements ReplayCache {
  readonly #entries = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #sweepEvery: number;
  readonly #graceSeconds: number;
  readonly #nowSeconds: () => number;
  #insertsSinceSweep = 0;

  constructor(options: MemoryReplayCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#sweepEvery = options.sweepEvery ?? 1_000;
    this.#graceSeconds = options.graceSeconds ?? 30;
    this.#nowSeconds = options.nowSeconds ?? (() => Date.now() / 1000);
  }

  /** How many ids are currently held (expired ones included until the next sweep). */
  get size(): number {
    return this.#entries.size;
  }

  async remember(jti: string, expiresAtSeconds: number): Promise<boolean> {
    return this.rememberSync(jti, expiresAtSeconds);
  }

  /** The synchronous core of `remember`. */
  rememberSync(jti: string, expiresAtSeconds: number): boolean {
    const now = this.#nowSeconds();
    const seen = this.#entries.get(jti);
    if (seen !== undefined) {
      if (!this.#isExpired(seen, now)) return false;
      this.#entries.delete(jti);
    }
    if (++this.#insertsSinceSweep >= this.#sweepEvery) this.sweep();
    if (this.#entries.size >= this.#maxEntries) {
      this.sweep();
      if (this.#entries.size >= this.#maxEntries) return false;
    }
    this.#entries.set(jti, expiresAtSeconds);
    return true;
  }

  /** Drops every expired entry. */
  sweep(): void {
    this.#insertsSinceSweep = 0;
    const now = this.#nowSeconds();
    for (const [jti, expiresAt] of this.#entries) {
      if (this.#isExpired(expiresAt, now)) this.#entries.delete(jti);
    }
  }

  #isExpired(expiresAtSeconds: number, now: number): boolean {
    return now >= expiresAtSeconds + this.#graceSeconds;
  }
}
