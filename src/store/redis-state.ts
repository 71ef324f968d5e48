import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { InvalidInputError, SharedStateUnavailableError } from "../core/errors.ts";
import type { RuntimeState } from "./runtime-state.ts";

/** A command that takes longer than this fails, so a hung Redis cannot hold requests forever. */
const COMMAND_TIMEOUT_MS = 2_000;
const CONNECT_TIMEOUT_MS = 5_000;
/** Reconnect forever, backing off to this; until then every command fails at once (no queue). */
const MAX_RECONNECT_DELAY_MS = 2_000;
export const DEFAULT_REDIS_PREFIX = "svc:";

// Each script is one atomic step on the server: what two replicas do at once cannot interleave.
const SWAP = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`;
const DELETE_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RESERVE_EVENT = `redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3]) redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1`;

const INCREMENT = `local total = redis.call('INCRBY', KEYS[1], ARGV[1])
  if total == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return total`;

export interface RedisStateOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://` for TLS. */
  url: string;
  /** Put before every key and channel, so several deployments (or test runs) can share a server. */
  prefix?: string | undefined;
}

/** `host:port/db`, for messages and `/api/ready`: never the user or the password. */
export function describeRedisUrl(url: string): string {
  const parsed = new URL(url);
  const db = parsed.pathname.replace(/^\//, "") || "0";
  return `${parsed.hostname}:${parsed.port || "6379"}/${db}`;
}

function parseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidInputError("SVC_REDIS_URL is not a URL; use redis://host:6379 (or rediss:// for TLS)");
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
    throw new InvalidInputError(
      `SVC_REDIS_URL must start with redis:// or rediss://, not ${parsed.protocol}//`,
    );
  }
  return parsed;
}

/**
 * Opens the hosted RuntimeState and waits for Redis to answer: a daemon that cannot reach the
 * Redis it was told to share with its replicas refuses to start rather than run on memory.
 */
export async function openRedisState(options: RedisStateOptions): Promise<RuntimeState> {
  parseUrl(options.url);
  const state = new RedisState(options);
  try {
    await state.connect();
  } catch (error) {
    await state.close();
    throw error;
  }
  return state;
}

/**
 * RuntimeState on Redis. Commands fail at once while the connection is down (no offline queue):
 * a caller gets SharedStateUnavailableError and `/api/ready` reports the outage, instead of
 * requests piling up or a replica quietly answering from memory of its own.
 */
class RedisState implements RuntimeState {
  readonly kind = "redis";
  readonly description: string;
  readonly #prefix: string;
  readonly #client: Redis;
  /** Subscriptions need a connection of their own (RESP2); opened with the first one. */
  #subscriber: Redis | undefined;
  readonly #listeners = new Map<string, Set<(message: string) => void>>();
  /** The last connection error, for messages (ioredis reports it as an event, not on commands). */
  #lastError: string | undefined;

  constructor(options: RedisStateOptions) {
    this.#prefix = options.prefix ?? DEFAULT_REDIS_PREFIX;
    this.description = `Redis ${describeRedisUrl(options.url)} (prefix ${this.#prefix})`;
    this.#client = new Redis(options.url, {
      keyPrefix: this.#prefix,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    });
    this.#client.on("error", (error: Error) => {
      this.#lastError = error.message;
    });
    this.#client.on("ready", () => {
      this.#lastError = undefined;
    });
  }

  async connect(): Promise<void> {
    await this.#run(() => this.#client.connect());
  }

  /** Runs a command; any failure becomes SharedStateUnavailableError naming the server, not the URL. */
  async #run<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      const reason = this.#lastError ?? (error instanceof Error ? error.message : String(error));
      throw new SharedStateUnavailableError(
        `the shared state (${this.description}) is unreachable: ${reason}; svc needs it for logins, sign-ins and every authenticated request`,
        { cause: error },
      );
    }
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.#run(() => this.#client.get(key))) ?? undefined;
  }

  async set(key: string, value: string, ttlMs: number, options: { ifAbsent?: boolean } = {}) {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    const reply = await this.#run(() =>
      options.ifAbsent
        ? this.#client.set(key, value, "PX", ttl, "NX")
        : this.#client.set(key, value, "PX", ttl),
    );
    return reply === "OK";
  }

  async swap(key: string, expected: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    return (await this.#run(() => this.#client.eval(SWAP, 1, key, expected, value, ttl))) === 1;
  }

  async take(key: string): Promise<string | undefined> {
    return (await this.#run(() => this.#client.getdel(key))) ?? undefined;
  }

  async delete(key: string, expected?: string): Promise<boolean> {
    const removed = await this.#run(() =>
      expected === undefined ? this.#client.del(key) : this.#client.eval(DELETE_IF, 1, key, expected),
    );
    return removed === 1;
  }

  async reserveEvent(key: string, atMs: number, windowMs: number, max: number) {
    // The member must be unique, or two events in the same millisecond would count once.
    const member = `${atMs}:${randomBytes(6).toString("base64url")}`;
    const noted = await this.#run(() =>
      this.#client.eval(RESERVE_EVENT, 1, key, atMs, Math.ceil(windowMs), member, max),
    );
    return noted === 1 ? member : undefined;
  }

  async increment(key: string, by: number, ttlMs: number): Promise<number> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    return Number(await this.#run(() => this.#client.eval(INCREMENT, 1, key, by, ttl)));
  }

  async removeEvent(key: string, id: string): Promise<void> {
    await this.#run(() => this.#client.zrem(key, id));
  }

  async events(key: string, nowMs: number, windowMs: number): Promise<number[]> {
    const reply = await this.#run(() =>
      this.#client.zrangebyscore(key, `(${nowMs - windowMs}`, "+inf", "WITHSCORES"),
    );
    // [member, score, member, score, ...]
    return reply.filter((_, index) => index % 2 === 1).map(Number);
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.#run(() => this.#client.publish(this.#prefix + channel, message));
  }

  async subscribe(channel: string, listener: (message: string) => void): Promise<() => void> {
    const subscriber = await this.#subscriberConnection();
    let listeners = this.#listeners.get(channel);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(channel, listeners);
      await this.#run(() => subscriber.subscribe(this.#prefix + channel));
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }

  async #subscriberConnection(): Promise<Redis> {
    if (this.#subscriber) return this.#subscriber;
    // Messages missed while it reconnects are harmless: they wake long polls and clear caches,
    // and both also expire on their own. ioredis subscribes again after a reconnect.
    const subscriber = this.#client.duplicate({ keyPrefix: "", autoResubscribe: true });
    subscriber.on("error", () => {});
    subscriber.on("message", (channel: string, message: string) => {
      const listeners = this.#listeners.get(channel.slice(this.#prefix.length));
      for (const listener of listeners ?? []) listener(message);
    });
    this.#subscriber = subscriber;
    await this.#run(() => subscriber.connect());
    return subscriber;
  }

  async ping(): Promise<void> {
    await this.#run(() => this.#client.ping());
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    for (const connection of [this.#subscriber, this.#client]) {
      if (!connection) continue;
      await connection.quit().catch(() => connection.disconnect());
    }
  }
}
