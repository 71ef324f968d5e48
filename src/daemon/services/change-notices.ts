import type { RuntimeState } from "../../store/runtime-state.ts";

/**
 * Tells every replica, this one included, that something a replica caches has changed in the
 * store (a vault's connections, the custom providers), so each drops its copy. The store stays
 * the source of truth: a notice lost while Redis is away leaves a cache stale only until the
 * next change, and readers that would answer "not found" look at the store once more first.
 */
export class ChangeNotices {
  readonly #state: RuntimeState;
  readonly #channel: string;

  constructor(state: RuntimeState, channel: string) {
    this.#state = state;
    this.#channel = channel;
  }

  /** Whether other processes write the same store (replicas), so a cache can go stale. */
  get shared(): boolean {
    return this.#state.kind !== "memory";
  }

  async listen(onChange: (key: string) => void): Promise<void> {
    await this.#state.subscribe(this.#channel, onChange);
  }

  /** Announces a change that is already stored; a failure to announce must not fail the write. */
  async announce(key: string): Promise<void> {
    await this.#state.publish(this.#channel, key).catch(() => undefined);
  }
}
