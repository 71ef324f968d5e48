import { afterEach, describe, expect, it } from "vitest";
import { generateHandle } from "../../src/identity/handle.ts";
import { generateIdentityKeyPair } from "../../src/identity/keypair.ts";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

let t: TestDaemon | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const usedHandles = new Set<string>();

/** A new key and a handle no other identity of this file has. */
function freshIdentity() {
  let handle = generateHandle();
  while (usedHandles.has(handle)) handle = generateHandle();
  usedHandles.add(handle);
  return { handle, ...generateIdentityKeyPair() };
}

/** Registers a brand-new key without a local proof (as a client on another machine does), from `address`. */
async function registerFresh(daemon: TestDaemon, address?: string) {
  const identity = freshIdentity();
  const body = JSON.stringify({ handle: identity.handle, did: identity.did });
  const token = signPopToken({ ...identity, method: "POST", pathAndQuery: "/api/identities", body });
  const headers: Record<string, string> = {
    authorization: `PoP ${token}`,
    "content-type": "application/json",
  };
  if (address) headers["x-forwarded-for"] = address;
  const response = await fetch(`${daemon.daemon.url}/api/identities`, { method: "POST", headers, body });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: (await response.json()) as { error?: string; claim_url?: string },
  };
}

async function unclaimedCount(daemon: TestDaemon): Promise<number> {
  const row = await daemon.daemon.context.store.db
    .selectFrom("identities")
    .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
    .where("principal_id", "is", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe("self-registration of unclaimed identities is bounded", () => {
  it("rate-limits registrations without a local proof per client address, with 429 and Retry-After", async () => {
    t = await startTestDaemon();
    const answers = [];
    for (let i = 0; i < 40; i++) answers.push(await registerFresh(t));
    const accepted = answers.filter((answer) => answer.status === 200);
    const limited = answers.filter((answer) => answer.status === 429);
    expect(accepted.length).toBeLessThanOrEqual(30);
    expect(limited.length).toBe(40 - accepted.length);
    expect(limited[0]!.body).toMatchObject({ error: "RateLimitedError" });
    expect(Number(limited[0]!.retryAfter)).toBeGreaterThan(0);
    expect(await unclaimedCount(t)).toBe(accepted.length);
    // A local client proving it shares the daemon's home is never held back.
    const local = await t.newIdentity();
    expect((await local.client.get<{ principal_id: string }>("/api/whoami")).principal_id).toMatch(/^prn_/);
  });

  it("caps unclaimed identities, whatever the addresses; the oldest past their claim window make room", async () => {
    t = await startTestDaemon({}, { config: { trustedProxies: ["127.0.0.1"] } });
    let refused: Awaited<ReturnType<typeof registerFresh>> | undefined;
    let registered = 0;
    for (let i = 0; i < 1_200 && !refused; i++) {
      const answer = await registerFresh(t, `10.0.${Math.floor(i / 250)}.${i % 250}`);
      if (answer.status === 429) refused = answer;
      else {
        expect(answer.status).toBe(200);
        registered++;
      }
    }
    expect(refused, "no cap within 1,200 unclaimed identities").toBeDefined();
    expect(Number(refused!.retryAfter)).toBeGreaterThan(0);
    expect(await unclaimedCount(t)).toBe(registered);

    // Once the oldest are past their claim window, a new registration takes the place of the oldest.
    const { db } = t.daemon.context.store;
    const oldest = await db
      .selectFrom("identities")
      .select("handle")
      .where("principal_id", "is", null)
      .orderBy("created_at")
      .limit(1)
      .executeTakeFirstOrThrow();
    await db
      .updateTable("identities")
      .set({ created_at: new Date(Date.now() - 60 * 60_000).toISOString() })
      .where("handle", "=", oldest.handle)
      .execute();
    const after = await registerFresh(t, "10.9.9.9");
    expect(after.status).toBe(200);
    expect(await unclaimedCount(t)).toBe(registered);
    const gone = await db
      .selectFrom("identities")
      .select("handle")
      .where("handle", "=", oldest.handle)
      .execute();
    expect(gone).toEqual([]);
  }, 120_000);
});
