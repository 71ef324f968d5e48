import type { ReplayCache } from "../../identity/pop-token.ts";
import type { RuntimeState } from "../../store/runtime-state.ts";

/** As MemoryReplayCache: keep an id a little past `exp`, for verifiers whose clocks differ slightly. */
const GRACE_SECONDS = 5;

/**
 * The replay cache of replicas: each token id is set once in the shared state (`SET NX` with a
 * time to live), so a token accepted by one replica is refused by every other. The embedded
 * daemon keeps MemoryReplayCache, which decides without a round trip.
 */
export class SharedReplayCache implements ReplayCache {
  readonly #state: RuntimeState;
  readonly #nowSeconds: () => number;

  constructor(state: RuntimeState, nowSeconds: () => number = () => Date.now() / 1000) {
    this.#state = state;
    this.#nowSeconds = nowSeconds;
  }

  remember(jti: string, expiresAtSeconds: number): Promise<boolean> {
    const ttlMs = (expiresAtSeconds + GRACE_SECONDS - this.#nowSeconds()) * 1000;
    return this.#state.set(`pop:${jti}`, "1", Math.max(1_000, ttlMs), { ifAbsent: true });
  }
}
