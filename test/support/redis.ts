/**
 * Redis for tests: the machine's server (`SVC_TEST_REDIS_URL`, default redis://127.0.0.1:6379),
 * each fixture under a key prefix of its own that it deletes afterwards. Like the PostgreSQL
 * suites, these fail (never skip) when the server cannot be reached: `.ci/run` starts it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export const TEST_REDIS_URL = process.env.SVC_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export interface RedisFixture {
  url: string;
  prefix: string;
  /** The daemon environment that puts its runtime state in this fixture. */
  env: { SVC_REDIS_URL: string; SVC_REDIS_PREFIX: string };
  /** Keys under the prefix, without it (what a test may look at). */
  keys(): Promise<string[]>;
  /** Deletes every key under the prefix. */
  dispose(): Promise<void>;
}

export function createRedisFixture(): RedisFixture {
  const prefix = `svc_test_${randomBytes(6).toString("hex")}:`;
  const client = () => new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  async function withClient<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
    const redis = client();
    try {
      await redis.connect();
      return await work(redis);
    } finally {
      redis.disconnect();
    }
  }
  async function scan(redis: Redis): Promise<string[]> {
    const found: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = next;
      found.push(...batch);
    } while (cursor !== "0");
    return found;
  }
  return {
    url: TEST_REDIS_URL,
    prefix,
    env: { SVC_REDIS_URL: TEST_REDIS_URL, SVC_REDIS_PREFIX: prefix },
    keys: () => withClient(async (redis) => (await scan(redis)).map((key) => key.slice(prefix.length))),
    dispose: () =>
      withClient(async (redis) => {
        const keys = await scan(redis);
        if (keys.length > 0) await redis.del(...keys);
      }),
  };
}
