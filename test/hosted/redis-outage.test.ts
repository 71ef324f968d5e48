import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Readiness } from "../../src/api/health.ts";
import { freePort } from "../support/cli.ts";
import { signedFetch, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** Whether a Redis server answers PING on `port`. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.setTimeout(500, () => socket.destroy());
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
    socket.once("close", () => resolve(false));
  });
}

/** A Redis server of this test's own, so it can be stopped without disturbing any other test. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await pings(port)) return child;
    await sleep(50);
  }
  child.kill("SIGKILL");
  throw new Error("redis-server did not start");
}

async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe("a replica that loses Redis", () => {
  let port: number;
  let redis: ChildProcess;
  let t: TestDaemon;

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    t = await startTestDaemon({ SVC_REDIS_URL: `redis://127.0.0.1:${port}`, SVC_REDIS_PREFIX: "outage:" });
  });
  afterAll(async () => {
    await t?.stop();
    if (redis) await stopRedis(redis);
  });

  const ready = () => signedFetch<Readiness>(t.daemon.url, t.identity, "GET", "/api/ready");

  it("is ready with the redis check while Redis answers", async () => {
    const response = await ready();
    expect(response.status).toBe(200);
    expect(response.body.status).toBe("ready");
    expect(response.body.checks.redis).toBe("ok");
  });

  it("reports not_ready with the reason, refuses what needs Redis, and recovers when it returns", async () => {
    await stopRedis(redis);
    const down = await ready();
    expect(down.status).toBe(200);
    expect(down.body.status).toBe("not_ready");
    expect(down.body.checks.redis).toBe("failed");
    expect(down.body.issues).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^redis: .*127\\.0\\.0\\.1:${port}`))]),
    );

    // No quiet fallback to memory: an authenticated request cannot be checked for replay.
    const refused = await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections");
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({
      error: "SharedStateUnavailableError",
      message: expect.stringContaining(`127.0.0.1:${port}`),
    });

    redis = await startRedis(port);
    await expect
      .poll(async () => (await ready()).body.status, { timeout: 10_000, interval: 200 })
      .toBe("ready");
    expect((await signedFetch(t.daemon.url, t.identity, "GET", "/api/connections")).status).toBe(200);
  });
});
