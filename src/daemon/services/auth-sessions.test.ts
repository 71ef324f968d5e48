import { afterAll, describe, expect, it } from "vitest";
import { createRedisFixture, type RedisFixture } from "../../../test/support/redis.ts";
import { InvalidInputError } from "../../core/errors.ts";
import { MemoryRuntimeState, openRuntimeState, type RuntimeState } from "../../store/runtime-state.ts";
import { AuthSessionService, type AuthSessionState } from "./auth-sessions.ts";

const fixtures: RedisFixture[] = [];
afterAll(async () => {
  for (const fixture of fixtures) await fixture.dispose();
});

interface Replicas {
  a: AuthSessionService;
  b: AuthSessionService;
  /** Another service on the same state whose clock reads `now` (a replica at a later moment). */
  at(now: () => Date): Promise<AuthSessionService>;
  /** Forgets everything the state held (a restart of the daemon, or of Redis), and opens a new service. */
  reset(): Promise<AuthSessionService>;
  close(): Promise<void>;
}

/** Two services over one state: one daemon's memory (the same service twice), or two replicas on one Redis. */
const kinds: Array<[string, () => Promise<Replicas>]> = [
  [
    "memory",
    async () => {
      const state = new MemoryRuntimeState();
      const service = await started(state);
      return {
        a: service,
        b: service,
        at: (now) => started(state, now),
        reset: () => started(new MemoryRuntimeState()),
        close: () => state.close(),
      };
    },
  ],
  [
    "redis",
    async () => {
      const fixture = createRedisFixture();
      fixtures.push(fixture);
      const states: RuntimeState[] = [];
      const open = async () => {
        const state = await openRuntimeState(fixture.env);
        states.push(state);
        return started(state);
      };
      return {
        a: await open(),
        b: await open(),
        at: async (now) => {
          const state = await openRuntimeState(fixture.env);
          states.push(state);
          return started(state, now);
        },
        reset: async () => {
          await fixture.dispose();
          return open();
        },
        close: async () => {
          for (const state of states) await state.close();
        },
      };
    },
  ],
];

async function started(state: RuntimeState, now: () => Date = () => new Date()): Promise<AuthSessionService> {
  const service = new AuthSessionService(state, now);
  await service.start();
  return service;
}

const owner = { handle: "agent-1", principalId: "prn_1", vaultId: "vlt_1" };

function create(service: AuthSessionService): Promise<AuthSessionState> {
  return service.create({
    owner,
    provider: "openai",
    connection: "default",
    flow: "api_key",
    force: false,
    via: "login",
    daemonUrl: "http://127.0.0.1:7998",
  });
}

describe.each(kinds)("AuthSessionService (%s)", (kind, open) => {
  it("lets another replica read a session and wakes a long poll when it changes there", async () => {
    const { a, b, close } = await open();
    try {
      const session = await create(a);
      await a.waitFor(session, "api_key");
      const seen = await b.forOwner(session.id, owner.handle);
      expect(seen).toMatchObject({ status: "waiting_for_user", waitingFor: "api_key" });
      expect(seen.createdAt).toBeInstanceOf(Date);

      const started = Date.now();
      const polled = a.waitForChange(session, 10_000);
      await b.processing(seen, "api_key");
      await polled;
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(session.status).toBe("processing");
      expect(session.waitingFor).toBeUndefined();
      expect(session.revision).toBe(seen.revision);
    } finally {
      await close();
    }
  });

  it("lets one of two concurrent submissions go on and tells the other the login moved on", async () => {
    const { a, b, close } = await open();
    try {
      const session = await create(a);
      await a.waitFor(session, "api_key");
      const [one, two] = [
        await a.forOwner(session.id, owner.handle),
        await b.forOwner(session.id, owner.handle),
      ];
      const results = await Promise.allSettled([a.processing(one, "api_key"), b.processing(two, "api_key")]);
      expect(results.map((result) => result.status).sort()).toEqual(["fulfilled", "rejected"]);
      expect(
        String((results.find((result) => result.status === "rejected") as PromiseRejectedResult).reason),
      ).toMatch(/already processing/);
    } finally {
      await close();
    }
  });

  it("hands an OAuth state to exactly one callback, on either replica", async () => {
    const { a, b, close } = await open();
    try {
      const session = await create(a);
      const state = await a.bindState(session, "random-part");
      await a.waitFor(session, "authorization", (next) => {
        next.oauth = { redirectUri: "http://127.0.0.1/cb", endpoints: {}, state };
      });
      const taken = await Promise.allSettled([a.takeState(state), b.takeState(state)]);
      expect(taken.filter((result) => result.status === "fulfilled")).toHaveLength(1);
      await expect(b.takeState(state)).rejects.toThrow(/already used/);
    } finally {
      await close();
    }
  });

  it("keeps a session cancelled on one replica cancelled: later steps on the other change nothing", async () => {
    const { a, b, close } = await open();
    try {
      const session = await create(a);
      await a.waitFor(session, "api_key");
      const other = await b.forOwner(session.id, owner.handle);
      expect(await b.cancel(other)).toBe(true);
      await a.waitFor(session, "device_code");
      expect(session.status).toBe("cancelled");
      expect(a.isOpen(session)).toBe(false);
      expect(await a.fail(session, new InvalidInputError("too late"))).toBe(false);
      expect((await a.forOwner(session.id, owner.handle)).error?.message).toBe("the login was cancelled");
    } finally {
      await close();
    }
  });

  it("expires a session nobody finished in time, for whichever replica reads it next", async () => {
    const { a, at, close } = await open();
    try {
      const session = await create(a);
      await a.waitFor(session, "api_key");
      const later = await at(() => new Date(Date.now() + 11 * 60_000));
      const expired = await later.forOwner(session.id, owner.handle);
      expect(expired).toMatchObject({ status: "expired", error: { error: "InputCancelledError" } });
      expect(expired.waitingFor).toBeUndefined();
      await expect(later.processing(expired, "api_key")).rejects.toThrow(/not completed in time/);
      expect((await a.forOwner(session.id, owner.handle)).status).toBe("expired");
    } finally {
      await close();
    }
  });

  it("says the state was lost when a session outlives the state it was created in", async () => {
    const { a, reset, close } = await open();
    try {
      const session = await create(a);
      const fresh = await reset();
      await expect(fresh.forOwner(session.id, owner.handle)).rejects.toThrow(
        kind === "memory"
          ? /the daemon restarted since this login began/
          : /shared state \(Redis\) was reset/,
      );
      await expect(fresh.forOwner("ses_unknown", owner.handle)).rejects.toThrow(/not found/);
    } finally {
      await close();
    }
  });
});
