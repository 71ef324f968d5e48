import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { createRedisFixture } from "../../../test/support/redis.ts";
import { openRuntimeState } from "../../store/runtime-state.ts";
import { DevicePollLeases, leaseMs } from "./device-poll-leases.ts";

describe("DevicePollLeases", () => {
  const fixture = createRedisFixture();
  afterAll(() => fixture.dispose());

  it("lets one replica poll a login, and another take it over once the first stops renewing", async () => {
    const [one, two] = [await openRuntimeState(fixture.env), await openRuntimeState(fixture.env)];
    try {
      const [a, b] = [new DevicePollLeases(one), new DevicePollLeases(two)];
      expect(await Promise.all([a.claim("ses_1", 300), b.claim("ses_1", 300)])).toEqual([true, false]);
      expect(await b.renew("ses_1", 300)).toBe(false);
      expect(await a.renew("ses_1", 300)).toBe(true);
      expect(await b.orphans()).toEqual([]);

      // A stops renewing (it died): its lease runs out and the login is an orphan B may claim.
      await sleep(400);
      expect(await b.orphans()).toEqual(["ses_1"]);
      expect(await b.claim("ses_1", 300)).toBe(true);
      expect(await a.renew("ses_1", 300)).toBe(false);

      // Ended: no one polls it, and it is no longer listed.
      await b.release("ses_1");
      await sleep(400);
      expect(await a.orphans()).toEqual([]);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it("hands a stopping replica's logins over at once", async () => {
    const [one, two] = [await openRuntimeState(fixture.env), await openRuntimeState(fixture.env)];
    try {
      const [a, b] = [new DevicePollLeases(one), new DevicePollLeases(two)];
      await a.claim("ses_2", 60_000);
      await a.claim("ses_3", 60_000);
      expect(await b.orphans()).toEqual([]);
      await a.releaseAll();
      expect((await b.orphans()).sort()).toEqual(["ses_2", "ses_3"]);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it("keeps a lease for at least three poll intervals, and never less than 10 s", () => {
    expect(leaseMs(1)).toBe(10_000);
    expect(leaseMs(5)).toBe(15_000);
  });
});
