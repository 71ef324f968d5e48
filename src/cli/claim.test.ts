import { describe, expect, it } from "vitest";
import type { Whoami } from "../api/health.ts";
import {
  AuthenticationFailedError,
  DaemonUnavailableError,
  InputCancelledError,
  OperationNotAllowedError,
} from "../core/errors.ts";
import { waitForClaim } from "./claim.ts";

const unclaimed: Whoami = { home: "/h", identity: "amber-otter-4821" };
const claimed: Whoami = { ...unclaimed, principal_id: "prn_1", principal_role: "user", vault_id: "vlt_1" };
const never = new Promise<void>(() => {});

/** A fake clock that the pauses advance. */
function clock(start = 0) {
  let now = start;
  return {
    now: () => now,
    pause: async (ms: number) => {
      now += ms;
    },
  };
}

describe("waitForClaim", () => {
  it("returns once whoami shows a principal", async () => {
    const answers = [unclaimed, unclaimed, claimed];
    let polls = 0;
    const time = clock();
    const result = await waitForClaim(async () => answers[polls++]!, {
      expiresAt: new Date(60_000),
      interrupted: never,
      ...time,
    });
    expect(result).toEqual(claimed);
    expect(polls).toBe(3);
    expect(time.now()).toBe(2000);
  });

  it("fails with what to do when the link expires unconfirmed", async () => {
    const error = await waitForClaim(async () => unclaimed, {
      expiresAt: new Date(5000),
      interrupted: never,
      ...clock(),
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AuthenticationFailedError);
    expect((error as Error).message).toMatch(/expired .*run `svc onboard` for a new link/);
  });

  it("is cancelled by Ctrl-C while waiting", async () => {
    let interrupt!: () => void;
    const interrupted = new Promise<void>((resolve) => {
      interrupt = resolve;
    });
    const waiting = waitForClaim(async () => unclaimed, {
      expiresAt: new Date(Date.now() + 60_000),
      interrupted,
      pollMs: 5,
    });
    setTimeout(interrupt, 20);
    await expect(waiting).rejects.toBeInstanceOf(InputCancelledError);
  });

  it("asks a briefly unreachable daemon again, and gives up after 10 s", async () => {
    const down = () => Promise.reject(new DaemonUnavailableError("down"));
    let polls = 0;
    const recovered = await waitForClaim(async () => (++polls < 4 ? down() : claimed), {
      expiresAt: new Date(600_000),
      interrupted: never,
      ...clock(),
    });
    expect(recovered).toEqual(claimed);

    const gone = await waitForClaim(down, {
      expiresAt: new Date(600_000),
      interrupted: never,
      ...clock(),
    }).catch((caught: unknown) => caught);
    expect(gone).toBeInstanceOf(DaemonUnavailableError);
  });

  it("passes on any other failure at once", async () => {
    await expect(
      waitForClaim(() => Promise.reject(new OperationNotAllowedError("no")), {
        expiresAt: new Date(600_000),
        interrupted: never,
        ...clock(),
      }),
    ).rejects.toBeInstanceOf(OperationNotAllowedError);
  });
});
