import { randomBytes } from "node:crypto";
import type { RuntimeState } from "../../store/runtime-state.ts";

/** A lease outlives a few poll intervals, so only a replica that stopped polling loses it. */
const MIN_LEASE_MS = 10_000;
/** The list of device logins in progress outlives any device code by far. */
const LIST_TTL_MS = 24 * 60 * 60 * 1000;
const LIST_KEY = "device-logins";
const MAX_LIST_ATTEMPTS = 50;

const leaseKey = (id: string) => `device-poller:${id}`;

/** How long a lease lasts for a login polled every `intervalSeconds`. */
export function leaseMs(intervalSeconds: number): number {
  return Math.max(MIN_LEASE_MS, intervalSeconds * 3_000);
}

/**
 * Which replica polls each device-code login in progress. The replica that starts a login takes
 * its lease and renews it at every poll; when a replica dies its leases run out, and another
 * replica finds the login among the orphans and polls it from then on. With one daemon the
 * leases are all its own.
 */
export class DevicePollLeases {
  readonly #state: RuntimeState;
  /** This replica, as the holder of a lease. */
  readonly #owner = randomBytes(12).toString("base64url");
  readonly #held = new Set<string>();

  constructor(state: RuntimeState) {
    this.#state = state;
  }

  /** Takes the lease of a login nobody polls (a new one, or an orphan); false when another replica has it. */
  async claim(id: string, ttlMs: number): Promise<boolean> {
    if (!(await this.#state.set(leaseKey(id), this.#owner, ttlMs, { ifAbsent: true }))) return false;
    this.#held.add(id);
    await this.#editList((ids) => (ids.includes(id) ? ids : [...ids, id]));
    return true;
  }

  /** Extends a lease this replica holds; false when it lost it (it must stop polling). */
  async renew(id: string, ttlMs: number): Promise<boolean> {
    const kept = await this.#state.swap(leaseKey(id), this.#owner, this.#owner, ttlMs);
    if (!kept) this.#held.delete(id);
    return kept;
  }

  /** The login ended (or was found ended): nobody needs to poll it any more. */
  async release(id: string): Promise<void> {
    this.#held.delete(id);
    await this.#state.delete(leaseKey(id), this.#owner);
    await this.#editList((ids) => ids.filter((other) => other !== id));
  }

  /** Logins in progress whose poller stopped renewing its lease. */
  async orphans(): Promise<string[]> {
    const ids = await this.#list();
    const leases = await Promise.all(ids.map((id) => this.#state.get(leaseKey(id))));
    return ids.filter((_, index) => leases[index] === undefined);
  }

  /** Lets go of every lease this replica holds (it is stopping), so others take over at once. */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.#held].map((id) => this.#state.delete(leaseKey(id), this.#owner)));
    this.#held.clear();
  }

  async #list(): Promise<string[]> {
    const raw = await this.#state.get(LIST_KEY);
    return raw === undefined ? [] : (JSON.parse(raw) as string[]);
  }

  /** Changes the list with compare-and-set, so replicas adding and removing at once lose nothing. */
  async #editList(change: (ids: string[]) => string[]): Promise<void> {
    for (let attempt = 0; attempt < MAX_LIST_ATTEMPTS; attempt++) {
      const raw = await this.#state.get(LIST_KEY);
      const ids = raw === undefined ? [] : (JSON.parse(raw) as string[]);
      const next = JSON.stringify(change(ids));
      if (raw === next) return;
      const written =
        raw === undefined
          ? await this.#state.set(LIST_KEY, next, LIST_TTL_MS, { ifAbsent: true })
          : await this.#state.swap(LIST_KEY, raw, next, LIST_TTL_MS);
      if (written) return;
    }
  }
}
