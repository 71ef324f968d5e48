import { readFileSync } from "node:fs";
import { writePrivateFile } from "../../core/secure-fs.ts";

const RUNNING = "running";
const CLOSED_PREFIX = "closed:";

/**
 * The embedded daemon remembers PoP token ids in memory, which a restart forgets. So that a token
 * accepted before a restart is not accepted again after it, the daemon refuses every token issued
 * before a horizon, computed from how the previous run ended (kept in a file beside the store,
 * `server/replay-horizon`, so the store itself is never written for it):
 * - no previous run in this home: no horizon (there is nothing to replay);
 * - a clean stop at time C: tokens with `iat` up to C's whole second are refused (the previous run
 *   may have accepted any of them), later ones are fresh;
 * - a run that never recorded its stop (killed, crashed): tokens issued before this start.
 * Tokens are stamped in whole seconds, so a command that signed its token in the second the
 * daemon stopped or started is refused once; the client signs again in the next second.
 */
export class ReplayHorizon {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  /** Marks this run as started; resolves the `iat` (seconds, maybe fractional) below which tokens are refused. */
  open(startedAt: Date): number {
    const previous = this.#read();
    writePrivateFile(this.#path, RUNNING);
    if (previous === undefined) return 0;
    const closedAtMs = previous.startsWith(CLOSED_PREFIX)
      ? Number(previous.slice(CLOSED_PREFIX.length))
      : NaN;
    if (Number.isFinite(closedAtMs)) return Math.floor(closedAtMs / 1000) + 1;
    return startedAt.getTime() / 1000;
  }

  /** Records a clean stop, after the last request was answered. */
  close(closedAt: Date): void {
    writePrivateFile(this.#path, `${CLOSED_PREFIX}${closedAt.getTime()}`);
  }

  #read(): string | undefined {
    try {
      return readFileSync(this.#path, "utf8").trim();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }
}
