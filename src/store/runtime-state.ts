import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { OperationNotAllowedError } from "../core/errors.ts";

/**
 * The daemon's short-lived shared state: auth sessions and OAuth `state`, one-time links and
 * claims, PoP token ids, the refresh lock, rate-limit counters, and the messages that tell other
 * replicas a cache is stale. Embedded, it lives in this process's memory; hosted
 * (`SVC_REDIS_URL`), in Redis, so every replica sees the same. Services are written once against
 * this interface; the two implementations share one contract test.
 *
 * Values are strings (callers serialise). Every key has a time to live: nothing here is meant to
 * last, and a lost entry costs a retry, never a credential (those live in the store).
 */
export interface RuntimeState {
  readonly kind: "memory" | "redis";
  /** Where it lives, for `/api/ready`; never a password. */
  readonly description: string;
  get(key: string): Promise<string | undefined>;
  /** Sets `key` for `ttlMs`. With `ifAbsent`, only when no live value is there: false when one is. */
  set(key: string, value: string, ttlMs: number, options?: { ifAbsent?: boolean }): Promise<boolean>;
  /** Compare-and-set: replaces the value only while it is still `expected`; false otherwise. */
  swap(key: string, expected: string, value: string, ttlMs: number): Promise<boolean>;
  /** Reads and deletes in one step: of two concurrent takers, one gets the value. */
  take(key: string): Promise<string | undefined>;
  /**
   * Deletes `key` (a value, or the events under it); with `expected`, only while it holds that
   * value (a lock's owner releasing it).
   */
  delete(key: string, expected?: string): Promise<boolean>;
  /**
   * Notes an event at `atMs` in a sliding window of `windowMs` under `key`, but only while fewer
   * than `max` are in the window, in one atomic step (so parallel callers cannot all slip under
   * the limit). Resolves the event's id, or undefined (nothing noted) when the window is full.
   */
  reserveEvent(key: string, atMs: number, windowMs: number, max: number): Promise<string | undefined>;
  /**
   * Adds `by` to the counter at `key` (created at 0 with a time to live of `ttlMs`, which later
   * additions do not extend) and resolves the new total: one atomic step, for fixed-window rates.
   */
  increment(key: string, by: number, ttlMs: number): Promise<number>;
  /** Forgets one event `reserveEvent` noted (an attempt that turned out not to count). */
  removeEvent(key: string, id: string): Promise<void>;
  /** The times of the events under `key` within the window ending at `nowMs`, oldest first. */
  events(key: string, nowMs: number, windowMs: number): Promise<number[]>;
  /** Tells every subscriber of `channel`, in every replica (this one included). */
  publish(channel: string, message: string): Promise<void>;
  /** Listens on `channel`; resolves once messages will arrive. The result unsubscribes. */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => void>;
  /** A cheap round trip proving the state answers (throws when it does not). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

interface Entry {
  value: string;
  expiresAt: number;
}

/** Sweep expired entries once this many are held, at most once a second. */
const SWEEP_THRESHOLD = 10_000;
/**
 * Entries of one kind (the key up to its first `:`) held at most: sessions, links and claims can
 * be created by callers who have proven little (a claim by anyone who registers an identity), so
 * memory must not grow without bound, and a flood of one kind must not crowd out the others.
 * Redis is bounded by its own `maxmemory` (docs/hosting.md).
 */
const DEFAULT_MAX_ENTRIES_PER_KIND = 50_000;

/** The kind of a key: `auth-session:ses_…` → `auth-session`. */
function kindOf(key: string): string {
  const colon = key.indexOf(":");
  return colon < 0 ? key : key.slice(0, colon);
}

/**
 * The embedded RuntimeState: maps in this process, lost on restart (spec: auth sessions live in
 * daemon memory). Expired entries are dropped when read, and swept in bulk when many are held.
 */
export class MemoryRuntimeState implements RuntimeState {
  readonly kind = "memory";
  readonly description = "memory (this daemon process)";
  readonly #entries = new Map<string, Entry>();
  readonly #events = new Map<string, { at: number; id: string }[]>();
  readonly #channels = new EventEmitter();
  readonly #now: () => number;
  readonly #maxPerKind: number;
  readonly #perKind = new Map<string, number>();
  #sweptAt = 0;

  constructor(options: { now?: () => number; maxEntriesPerKind?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#maxPerKind = options.maxEntriesPerKind ?? DEFAULT_MAX_ENTRIES_PER_KIND;
    this.#channels.setMaxListeners(0);
  }

  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.expiresAt <= this.#now()) {
      this.#remove(key);
      return undefined;
    }
    return entry;
  }

  #remove(key: string): boolean {
    if (!this.#entries.delete(key)) return false;
    const kind = kindOf(key);
    this.#perKind.set(kind, (this.#perKind.get(kind) ?? 1) - 1);
    return true;
  }

  #put(key: string, value: string, ttlMs: number): void {
    const now = this.#now();
    if (this.#entries.size >= SWEEP_THRESHOLD && now - this.#sweptAt > 1000) {
      this.#sweptAt = now;
      for (const [name, entry] of this.#entries) if (entry.expiresAt <= now) this.#remove(name);
    }
    if (!this.#entries.has(key)) {
      const kind = kindOf(key);
      const held = this.#perKind.get(kind) ?? 0;
      if (held >= this.#maxPerKind) {
        throw new OperationNotAllowedError(
          `too many ${kind} entries are pending in this daemon; try again in a few minutes`,
        );
      }
      this.#perKind.set(kind, held + 1);
    }
    this.#entries.set(key, { value, expiresAt: now + ttlMs });
  }

  async get(key: string): Promise<string | undefined> {
    return this.#live(key)?.value;
  }

  async set(key: string, value: string, ttlMs: number, options: { ifAbsent?: boolean } = {}) {
    if (options.ifAbsent && this.#live(key)) return false;
    this.#put(key, value, ttlMs);
    return true;
  }

  async swap(key: string, expected: string, value: string, ttlMs: number): Promise<boolean> {
    if (this.#live(key)?.value !== expected) return false;
    this.#put(key, value, ttlMs);
    return true;
  }

  async take(key: string): Promise<string | undefined> {
    const entry = this.#live(key);
    this.#remove(key);
    return entry?.value;
  }

  async delete(key: string, expected?: string): Promise<boolean> {
    if (expected === undefined && this.#events.delete(key)) return true;
    const entry = this.#live(key);
    if (!entry || (expected !== undefined && entry.value !== expected)) return false;
    return this.#remove(key);
  }

  async reserveEvent(key: string, atMs: number, windowMs: number, max: number) {
    // No await between the count and the push: the check and the reservation are one step.
    const recent = this.#recent(key, atMs, windowMs);
    if (recent.length >= max) return undefined;
    const id = randomBytes(6).toString("base64url");
    recent.push({ at: atMs, id });
    this.#events.set(key, recent);
    if (this.#events.size > SWEEP_THRESHOLD) {
      for (const name of this.#events.keys()) this.#recent(name, atMs, windowMs);
    }
    return id;
  }

  async increment(key: string, by: number, ttlMs: number): Promise<number> {
    const entry = this.#live(key);
    const total = Number(entry?.value ?? 0) + by;
    if (entry) entry.value = String(total);
    else this.#put(key, String(total), ttlMs);
    return total;
  }

  async removeEvent(key: string, id: string): Promise<void> {
    const recent = this.#events.get(key)?.filter((event) => event.id !== id);
    if (!recent?.length) this.#events.delete(key);
    else this.#events.set(key, recent);
  }

  async events(key: string, nowMs: number, windowMs: number): Promise<number[]> {
    return this.#recent(key, nowMs, windowMs).map((event) => event.at);
  }

  /** The events under `key` still in the window (a copy); older ones are dropped. */
  #recent(key: string, nowMs: number, windowMs: number): { at: number; id: string }[] {
    const recent = (this.#events.get(key) ?? []).filter((event) => event.at > nowMs - windowMs);
    if (recent.length === 0) this.#events.delete(key);
    else this.#events.set(key, recent);
    return [...recent];
  }

  async publish(channel: string, message: string): Promise<void> {
    this.#channels.emit(channel, message);
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => void> {
    this.#channels.on(channel, listener);
    return () => this.#channels.off(channel, listener);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.#channels.removeAllListeners();
  }
}

/**
 * The daemon's RuntimeState: Redis when `SVC_REDIS_URL` is set (hosted, shared by replicas),
 * otherwise this process's memory. The Redis client loads only when used.
 */
export async function openRuntimeState(env: {
  SVC_REDIS_URL?: string | undefined;
  SVC_REDIS_PREFIX?: string | undefined;
}): Promise<RuntimeState> {
  const url = env.SVC_REDIS_URL?.trim();
  if (!url) return new MemoryRuntimeState();
  const { openRedisState } = await import("./redis-state.ts");
  return openRedisState({ url, prefix: env.SVC_REDIS_PREFIX?.trim() || undefined });
}
