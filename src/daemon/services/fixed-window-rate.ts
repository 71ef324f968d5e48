import type { RuntimeState } from "../../store/runtime-state.ts";

/**
 * Counts units (events) per key in fixed windows: a key that went past `max` in the current window
 * waits for the next one. The counter lives in the runtime state, so replicas count together, and
 * it is charged before the work it guards, so parallel requests cannot all slip under the limit.
 */
export class FixedWindowRate {
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

  /** Charges `units` to `key`; resolves 0 when they fit, else the seconds until the next window. */
  async charge(key: string, units: number, now: Date): Promise<number> {
    const window = Math.floor(now.getTime() / this.#windowMs);
    const total = await this.#state.increment(`${this.#kind}:${key}:${window}`, units, this.#windowMs);
    if (total <= this.#max) return 0;
    return Math.max(1, Math.ceil(((window + 1) * this.#windowMs - now.getTime()) / 1000));
  }
}
