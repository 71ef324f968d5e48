/**
 * The shipper's bookkeeping when the daemon refuses batches. Delivery against the daemon's real
 * rate limit is in test/daemon/audit-flood.test.ts; here `send` answers as the daemon client would.
 */
import { describe, expect, it, vi } from "vitest";
import type { ExternalAuditEvent } from "../api/audit.ts";
import { DaemonUnavailableError, RateLimitedError, type SvcError } from "../core/errors.ts";
import { AuditShipper } from "./audit-shipper.ts";

function events(count: number, from = 0): ExternalAuditEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    timestamp: new Date().toISOString(),
    event: "proxy.request",
    status: "success",
    detail: { path: `/n/${from + i}` },
  }));
}

function rateLimited(seconds: number): SvcError {
  const error = new RateLimitedError("this identity sent more than 30000 proxy events this minute");
  error.retryAfterSeconds = seconds;
  return error;
}

describe("AuditShipper", () => {
  it("does not wait out a rate limit at close: the refused batch and the rest are counted as dropped", async () => {
    const send = vi.fn(async () => {
      throw rateLimited(60);
    });
    const shipper = new AuditShipper({ send, batchSize: 200, intervalMs: 10 });
    for (const event of events(450)) shipper.push(event);
    await vi.waitUntil(() => send.mock.calls.length >= 1);
    const started = performance.now();
    const report = await shipper.close();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(report).toEqual({ delivered: 0, dropped: 450, rateLimited: true });
    // Held during the wait; closing tried once more, then gave up on everything left.
    expect(send).toHaveBeenCalledTimes(2);
  });

  it("drops a batch refused for another reason and goes on with the next", async () => {
    const send = vi
      .fn<(batch: ExternalAuditEvent[]) => Promise<void>>()
      .mockRejectedValueOnce(new DaemonUnavailableError("the daemon closed the connection"))
      .mockResolvedValue(undefined);
    const shipper = new AuditShipper({ send, batchSize: 200, intervalMs: 10 });
    for (const event of events(400)) shipper.push(event);
    expect(await shipper.close()).toEqual({ delivered: 200, dropped: 200, rateLimited: false });
  });

  it("holds refused events ahead of newer ones, and drops what exceeds the queue while it waits", async () => {
    const delivered: string[] = [];
    const send = vi
      .fn<(batch: ExternalAuditEvent[]) => Promise<void>>()
      .mockRejectedValueOnce(rateLimited(0.2))
      .mockImplementation(async (batch) => {
        delivered.push(...batch.map((event) => String(event.detail?.path)));
      });
    const shipper = new AuditShipper({ send, batchSize: 200, maxQueue: 300, intervalMs: 10 });
    for (const event of events(300)) shipper.push(event);
    await vi.waitUntil(() => send.mock.calls.length >= 1);
    // The queue is full again once the refused batch is back: these do not fit.
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const event of events(50, 300)) shipper.push(event);
    await vi.waitUntil(() => delivered.length === 300, { timeout: 3_000 });
    expect(delivered).toEqual(events(300).map((event) => String(event.detail?.path)));
    expect(await shipper.close()).toEqual({ delivered: 300, dropped: 50, rateLimited: true });
  });
});
