import type { SettingsRepository } from "../../store/settings.ts";

/** Where the embedded daemon notes whether its last run ended cleanly, and when. */
const HORIZON_KEY = "pop_replay_horizon";
const RUNNING = "running";
const CLOSED_PREFIX = "closed:";

/**
 * The embedded daemon remembers PoP token ids in memory, which a restart forgets. So that a token
 * accepted before a restart is not accepted again after it, the daemon refuses every token issued
 * before a horizon, computed from how the previous run ended (kept in the store):
 * - no previous run on this store: no horizon (there is nothing to replay);
 * - a clean stop at time C: tokens with `iat` up to C's whole second are refused (the previous run
 *   may have accepted any of them), later ones are fresh;
 * - a run that never recorded its stop (killed, crashed): tokens issued before this start.
 * Tokens are stamped in whole seconds, so a command that signed its token in the second the
 * daemon stopped or started is refused once; the client signs again in the next second.
 */
export class ReplayHorizon {
  readonly #settings: SettingsRepository;

  constructor(settings: SettingsRepository) {
    this.#settings = settings;
  }

  /** Marks this run as started; resolves the `iat` (seconds, maybe fractional) below which tokens are refused. */
  async open(startedAt: Date): Promise<number> {
    const previous = await this.#settings.get(HORIZON_KEY);
    await this.#settings.set(HORIZON_KEY, RUNNING);
    if (previous === undefined) return 0;
    const closedAtMs = previous.startsWith(CLOSED_PREFIX)
      ? Number(previous.slice(CLOSED_PREFIX.length))
      : NaN;
    if (Number.isFinite(closedAtMs)) return Math.floor(closedAtMs / 1000) + 1;
    return startedAt.getTime() / 1000;
  }

  /** Records a clean stop, after the last request was answered. */
  async close(closedAt: Date): Promise<void> {
    await this.#settings.set(HORIZON_KEY, `${CLOSED_PREFIX}${closedAt.getTime()}`);
  }
}
