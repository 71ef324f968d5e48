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
  /** Hard cap on remembered ids. Default 1 000 000 (about 5 000 tokens/s sustained). */
  maxEntries?: number;
  /**
   * Entries are kept this long past their `exp`, so a verifier whose clock reads a little behind
   * this cache's can never see a token still valid while its id is already forgotten. Default 5
   * (the verifier and this cache read the same process clock).
   */
  graceSeconds?: number;
  /** The clock, in seconds since the epoch; defaults to the system clock. */
  nowSeconds?: () => number;
}

/**
 * An in-memory ReplayCache. Ids are grouped in buckets by the second they may be forgotten, so
 * expiry drops whole buckets (at most once a second) and never scans the live entries; there are
 * no timers, so it never keeps a process alive. When the cap is reached, new ids are refused
 * (false) rather than old ones forgotten: forgetting a seen id would let its token be replayed,
 * while refusing only fails requests until entries expire (tokens live at most 60 s). Only tokens
 * that are otherwise valid reach the cache, so filling it takes a valid signing key.
 */
export class MemoryReplayCache implements ReplayCache {
  readonly #forgetAt = new Map<string, number>();
  readonly #buckets = new Map<number, string[]>();
  readonly #maxEntries: number;
  readonly #graceSeconds: number;
  readonly #nowSeconds: () => number;
  #sweptAt = Number.NEGATIVE_INFINITY;

  constructor(options: MemoryReplayCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 1_000_000;
    this.#graceSeconds = options.graceSeconds ?? 5;
    this.#nowSeconds = options.nowSeconds ?? (() => Date.now() / 1000);
  }

  /** How many ids are currently held (expired ones included until the next sweep). */
  get size(): number {
    return this.#forgetAt.size;
  }

  async remember(jti: string, expiresAtSeconds: number): Promise<boolean> {
    return this.rememberSync(jti, expiresAtSeconds);
  }

  /** The synchronous core of `remember`. */
  rememberSync(jti: string, expiresAtSeconds: number): boolean {
    const now = this.#nowSeconds();
    if (Math.floor(now) !== this.#sweptAt) this.sweep();
    const seen = this.#forgetAt.get(jti);
    if (seen !== undefined && now < seen) return false;
    if (seen === undefined && this.#forgetAt.size >= this.#maxEntries) return false;
    const forgetAt = Math.ceil(expiresAtSeconds + this.#graceSeconds);
    this.#forgetAt.set(jti, forgetAt);
    const bucket = this.#buckets.get(forgetAt);
    if (bucket) bucket.push(jti);
    else this.#buckets.set(forgetAt, [jti]);
    return true;
  }

  /** Drops every bucket whose time has come. */
  sweep(): void {
    const now = this.#nowSeconds();
    this.#sweptAt = Math.floor(now);
    for (const [forgetAt, ids] of this.#buckets) {
      if (now < forgetAt) continue;
      for (const id of ids) {
        // An id re-remembered later sits in a later bucket; only forget it from its own.
        if (this.#forgetAt.get(id) === forgetAt) this.#forgetAt.delete(id);
      }
      this.#buckets.delete(forgetAt);
    }
  }
}
