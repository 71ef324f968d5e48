import { afterEach, describe, expect, it } from "vitest";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let t: TestDaemon | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

async function whoami(daemon: TestDaemon, token: string) {
  const response = await fetch(`${daemon.daemon.url}/api/whoami`, {
    headers: { authorization: `PoP ${token}` },
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: await response.json(),
  };
}

describe("the embedded daemon's replay horizon", () => {
  it("refuses after a restart a token it accepted before, and says when a new one will do", async () => {
    t = await startTestDaemon();
    const token = signPopToken({ ...t.identity, method: "GET", pathAndQuery: "/api/whoami" });
    expect((await whoami(t, token)).status).toBe(200);
    t = await t.restart();
    const replayed = await whoami(t, token);
    expect(replayed.status).toBe(401);
    expect(replayed.retryAfter).toBe("1");
    expect(replayed.body).toMatchObject({
      error: "AuthenticationFailedError",
      message: expect.stringMatching(/before the daemon/),
    });
  });

  it("accepts any fresh token in a home no daemon ran in before", async () => {
    t = await startTestDaemon();
    expect(t.daemon.context.popIssuedNotBefore).toBe(0);
  });

  it("a client whose token predates the horizon signs a new one a second later, transparently", async () => {
    t = await startTestDaemon();
    // As right after a restart in this very second: tokens stamped this second are refused.
    t.daemon.context.popIssuedNotBefore = Math.floor(Date.now() / 1000) + 1;
    const started = Date.now();
    const answer = await t.client.get<{ identity: string }>("/api/whoami");
    expect(answer.identity).toBe(t.identity.handle);
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});
