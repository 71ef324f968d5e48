import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { createRedisFixture, type RedisFixture } from "../support/redis.ts";
import { createStoreFixture, type StoreFixture } from "../support/stores.ts";
import { WebSession } from "../support/web-session.ts";

const PASSWORD = "correct horse battery";

/** A raw POST of `{email, password}` with exactly the headers given (no Origin unless asked). */
async function post(t: TestDaemon, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${t.daemon.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as never };
}

describe("register and sign-in are same-origin only, and register tells no one which emails exist", () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon();
    expect((await new WebSession(t.daemon.url).signIn("ada@example.com", PASSWORD, true)).status).toBe(200);
  });
  afterAll(async () => {
    await t.stop();
  });

  for (const path of ["/api/auth/register", "/api/auth/login"]) {
    it(`refuses ${path} without an Origin, or from a page that is not the daemon's own`, async () => {
      const own = new URL(t.daemon.url).origin;
      const account = { email: "ada@example.com", password: PASSWORD };
      const refusals = [
        await post(t, path, account),
        await post(t, path, account, { origin: own, "sec-fetch-site": "same-site" }),
        await post(t, path, account, { origin: own, "sec-fetch-site": "cross-site" }),
        await post(t, path, account, { origin: "http://evil.test" }),
      ];
      for (const refused of refusals) {
        expect(refused.status).toBe(403);
        expect(refused.body).toMatchObject({ error: "OperationNotAllowedError" });
        expect(refused.headers.get("set-cookie")).toBeNull();
      }
    });
  }

  it("answers a registration for a taken email exactly as one for a new email, and signs neither in", async () => {
    const origin = new URL(t.daemon.url).origin;
    const fresh = await post(
      t,
      "/api/auth/register",
      { email: "new@example.com", password: PASSWORD },
      { origin },
    );
    const taken = await post(
      t,
      "/api/auth/register",
      { email: "ada@example.com", password: "another password" },
      { origin },
    );
    expect(taken.status).toBe(fresh.status);
    expect(taken.body).toEqual(fresh.body);
    expect(fresh.headers.get("set-cookie")).toBeNull();
    expect(taken.headers.get("set-cookie")).toBeNull();
    // The new account signs in with its password; the taken one still only with its owner's.
    expect((await new WebSession(t.daemon.url).signIn("new@example.com", PASSWORD)).status).toBe(200);
    expect((await new WebSession(t.daemon.url).signIn("ada@example.com", "another password")).status).toBe(
      401,
    );
    expect((await new WebSession(t.daemon.url).signIn("ada@example.com", PASSWORD)).status).toBe(200);
  });

  it("puts a registration attempt for a taken email on that account's own audit log", async () => {
    const owner = new WebSession(t.daemon.url);
    await owner.signIn("ada@example.com", PASSWORD);
    const page = await owner.request("GET", "/api/audit/events?event=account.registration_repeated");
    const { events } = (await page.json()) as { events: { status: string }[] };
    expect(events.length).toBeGreaterThan(0);
    expect(events[0]).toMatchObject({ status: "failure" });
  });
});

/**
 * 40 parallel sign-ins for one email, the right password last: the attempts are reserved before
 * the (slow) password check, so at most `limit` reach it and the right password is refused too.
 */
async function parallelSignIns(t: TestDaemon): Promise<void> {
  const email = "target@example.com";
  expect((await new WebSession(t.daemon.url).signIn(email, PASSWORD, true)).status).toBe(200);
  const origin = new URL(t.daemon.url).origin;
  const attempt = (password: string) => post(t, "/api/auth/login", { email, password }, { origin });
  let firstAnswered!: () => void;
  const firstAnswer = new Promise<void>((resolve) => {
    firstAnswered = resolve;
  });
  const wrong = Array.from({ length: 39 }, (_, i) =>
    attempt(`wrong password ${i}`).finally(() => firstAnswered()),
  );
  // The right one goes out while the wrong ones are still being checked (scrypt takes ~100 ms each).
  await firstAnswer;
  const right = await attempt(PASSWORD);
  const answers = await Promise.all(wrong);
  const checked = answers.filter((answer) => answer.status === 401).length;
  const limited = answers.filter((answer) => answer.status === 429);
  expect(checked).toBeLessThanOrEqual(5);
  expect(checked + limited.length).toBe(39);
  for (const answer of limited) expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(right.status).toBe(429);
  expect(right.headers.get("set-cookie")).toBeNull();
}

describe("sign-in limits hold under parallel attempts", () => {
  it("on SQLite with the limits in daemon memory", async () => {
    const t = await startTestDaemon();
    try {
      await parallelSignIns(t);
    } finally {
      await t.stop();
    }
  });

  it("on PostgreSQL with the limits in Redis", async () => {
    let store: StoreFixture | undefined;
    let redis: RedisFixture | undefined;
    let t: TestDaemon | undefined;
    try {
      store = await createStoreFixture("postgres");
      redis = createRedisFixture();
      t = await startTestDaemon({ ...store.env, ...redis.env });
      await parallelSignIns(t);
    } finally {
      await t?.stop();
      await redis?.dispose();
      await store?.dispose();
    }
  });
});
