import { afterAll, describe, expect, it } from "vitest";
import { createRedisFixture } from "../../../test/support/redis.ts";
import { openRuntimeState } from "../../store/runtime-state.ts";
import { SharedReplayCache } from "./shared-replay-cache.ts";

describe("SharedReplayCache", () => {
  const fixture = createRedisFixture();
  afterAll(() => fixture.dispose());

  it("accepts a token id once across replicas, and forgets it after exp plus the grace", async () => {
    const [one, two] = [await openRuntimeState(fixture.env), await openRuntimeState(fixture.env)];
    try {
      const now = Date.now() / 1000;
      const [a, b] = [new SharedReplayCache(one), new SharedReplayCache(two)];
      const answers = await Promise.all([
        a.remember("iss|jti-1", now + 60),
        b.remember("iss|jti-1", now + 60),
      ]);
      expect(answers.sort()).toEqual([false, true]);
      expect(await b.remember("iss|jti-2", now + 60)).toBe(true);

      // A token that expired long ago is kept only for the minimum second.
      const clocked = new SharedReplayCache(one, () => now + 3_600);
      expect(await clocked.remember("iss|old", now)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await clocked.remember("iss|old", now)).toBe(true);
      expect((await fixture.keys()).sort()).toEqual(["pop:iss|jti-1", "pop:iss|jti-2", "pop:iss|old"]);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
