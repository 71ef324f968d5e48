/**
 * Shares the result of an expensive readiness probe among callers for a short time. Readiness is
 * polled (load balancers, `svc doctor`, dashboards); a vault round trip is two committed writes
 * and the integrity check opens every stored record, so running them for every poll would make
 * the probe the daemon's heaviest route. Concurrent callers also share one probe in flight.
 */
export class ProbeCache<T> {
  readonly #entries = new Map<string, { at: number; result: Promise<T> }>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  run(key: string, ttlMs: number, probe: () => Promise<T>): Promise<T> {
    const now = this.#now();
    const entry = this.#entries.get(key);
    if (entry && now - entry.at < ttlMs) return entry.result;
    const result = probe();
    this.#entries.set(key, { at: now, result });
    return result;
  }
}
