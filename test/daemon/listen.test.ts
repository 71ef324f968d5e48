import { describe, expect, it } from "vitest";
import { UnexpectedError } from "../../src/core/errors.ts";
import { startTestDaemon } from "../support/daemon.ts";

describe("listening", () => {
  it("says what to do when the port is taken, and leaves the running daemon serving", async () => {
    const first = await startTestDaemon();
    try {
      const port = Number(new URL(first.daemon.url).port);
      const second = startTestDaemon({}, { port });
      await expect(second).rejects.toBeInstanceOf(UnexpectedError);
      await expect(second).rejects.toThrow(`127.0.0.1:${port} is already in use`);
      expect((await fetch(`${first.daemon.url}/api/health`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  });
});
