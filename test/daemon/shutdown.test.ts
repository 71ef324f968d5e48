import { describe, expect, it } from "vitest";
import { startTestDaemon } from "../support/daemon.ts";

describe("graceful shutdown", () => {
  it("answers every request that arrived before close in full, then closes the store", async () => {
    const t = await startTestDaemon();
    let arrived = 0;
    const closed = new Promise<void>((resolve, reject) => {
      t.daemon.app.server.on("request", () => {
        arrived += 1;
        if (arrived === 5) t.daemon.close().then(resolve, reject);
      });
    });
    const requests = Array.from({ length: 5 }, () => t.client.get<{ status: string }>("/api/ready"));
    const answers = await Promise.all(requests);
    await closed;
    expect(answers.map((answer) => answer.status)).toEqual(Array(5).fill("ready"));
    await expect(t.client.get("/api/ready")).rejects.toMatchObject({ errorName: "DaemonUnavailableError" });
    await expect(t.daemon.context.store.probe()).rejects.toThrow();
    await t.stop();
  });
});
