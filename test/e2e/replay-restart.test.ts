import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { homeLayout } from "../../src/core/paths.ts";
import { IdentityFiles, type LocalIdentity } from "../../src/identity/identity-files.ts";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { SvcSandbox } from "../support/cli.ts";

/**
 * A PoP token is single use. The embedded daemon keeps the ids it has seen in memory, so a
 * restart must not make a token seen before it acceptable again.
 */
describe("a PoP token used once stays used across daemon restarts (embedded mode)", () => {
  let sandbox: SvcSandbox;
  let identity: LocalIdentity;
  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    const whoami = await sandbox.json<{ identity: string }>(["whoami"]);
    identity = new IdentityFiles(homeLayout(sandbox.home).identities).load(whoami.identity);
  }, 60_000);
  afterAll(async () => {
    await sandbox.destroy();
  });

  const whoamiToken = () => signPopToken({ ...identity, method: "GET", pathAndQuery: "/api/whoami" });
  const send = async (token: string) => {
    const response = await fetch(`${sandbox.baseUrl}/api/whoami`, {
      headers: { authorization: `PoP ${token}` },
    });
    return { status: response.status, body: (await response.json()) as { error?: string } };
  };

  it("refuses a token replayed after `svc daemon restart`", async () => {
    const token = whoamiToken();
    expect((await send(token)).status).toBe(200);
    expect((await send(token)).status).toBe(401);
    const restart = await sandbox.run(["daemon", "restart"]);
    expect(restart.code, restart.stderr).toBe(0);
    const replayed = await send(token);
    expect(replayed.status).toBe(401);
    expect(replayed.body.error).toBe("AuthenticationFailedError");
  }, 60_000);

  it("refuses a token replayed after the daemon was killed and started again", async () => {
    const token = whoamiToken();
    expect((await send(token)).status).toBe(200);
    const pid = Number(readFileSync(homeLayout(sandbox.home).daemonPid, "utf8").trim());
    process.kill(pid, "SIGKILL");
    const start = await sandbox.run(["daemon", "start"]);
    expect(start.code, start.stderr).toBe(0);
    expect((await send(token)).status).toBe(401);
  }, 60_000);

  it("a CLI command right after a restart still succeeds: a refused pre-start token is signed again", async () => {
    for (let round = 0; round < 3; round++) {
      const restart = await sandbox.run(["daemon", "restart"]);
      expect(restart.code, restart.stderr).toBe(0);
      const whoami = await sandbox.run(["whoami", "--json"]);
      expect(whoami.code, whoami.stderr).toBe(0);
      expect(JSON.parse(whoami.stdout)).toMatchObject({ identity: identity.handle });
    }
  }, 90_000);
});
