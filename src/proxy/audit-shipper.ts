import type { ExternalAuditEvent } from "../api/audit.ts";
import { MAX_AUDIT_BATCH } from "../api/audit.ts";
import { SvcError } from "../core/errors.ts";

export interface AuditShipperOptions {
  /** Delivers one batch (`POST /audit/events`). */
  send: (events: ExternalAuditEvent[]) => Promise<void>;
  /** Events kept while the daemon is slow; beyond this they are dropped and counted. */
  maxQueue?: number;
  batchSize?: number;
  intervalMs?: number;
}

export interface ShipmentReport {
  delivered: number;
  dropped: number;
  /** Whether the daemon's rate limit refused some of them (it takes a bounded number per minute). */
  rateLimited: boolean;
}

/** A batch the daemon refused for now, with how long it asked to wait (Retry-After). */
function rateLimitWait(error: unknown): number | undefined {
  if (!(error instanceof SvcError) || error.errorName !== "RateLimitedError") return undefined;
  return (error.retryAfterSeconds ?? 1) * 1000;
}

/**
 * Ships the proxy's external audit events to the daemon in the background. Traffic never waits
 * for it: `push` only appends to a bounded queue, and one batch is in flight at a time. A batch the
 * daemon's rate limit refuses goes back to the front of the queue until the Retry-After it named
 * has passed, so a burst is delivered late rather than lost; events that do not fit the queue, or
 * whose batch the daemon refuses otherwise, are counted as dropped.
 */
export class AuditShipper {
  readonly #send: AuditShipperOptions["send"];
  readonly #maxQueue: number;
  readonly #batchSize: number;
  readonly #timer: NodeJS.Timeout;
  #queue: ExternalAuditEvent[] = [];
  #inFlight: Promise<void> | undefined;
  /** No batch is sent before this time (ms): the daemon's Retry-After. */
  #pausedUntil = 0;
  #closing = false;
  #delivered = 0;
  #dropped = 0;
  #rateLimited = false;

  constructor(options: AuditShipperOptions) {
    this.#send = options.send;
    this.#maxQueue = options.maxQueue ?? 10_000;
    this.#batchSize = Math.min(options.batchSize ?? 200, MAX_AUDIT_BATCH);
    this.#timer = setInterval(() => void this.#ship(), options.intervalMs ?? 1_000);
    this.#timer.unref();
  }

  push(event: ExternalAuditEvent): void {
    if (this.#queue.length >= this.#maxQueue) {
      this.#dropped++;
      return;
    }
    this.#queue.push(event);
    if (this.#queue.length >= this.#batchSize) void this.#ship();
  }

  #ship(): Promise<void> {
    if (this.#inFlight || this.#queue.length === 0) return this.#inFlight ?? Promise.resolve();
    if (!this.#closing && Date.now() < this.#pausedUntil) return Promise.resolve();
    const batch = this.#queue.splice(0, this.#batchSize);
    this.#inFlight = this.#send(batch)
      .then(
        () => {
          this.#delivered += batch.length;
        },
        (error: unknown) => this.#refused(batch, error),
      )
      .finally(() => {
        this.#inFlight = undefined;
      });
    return this.#inFlight;
  }

  #refused(batch: ExternalAuditEvent[], error: unknown): void {
    const wait = rateLimitWait(error);
    if (wait === undefined) {
      this.#dropped += batch.length;
      return;
    }
    this.#rateLimited = true;
    if (this.#closing) {
      // Closing does not wait out a rate limit (`svc run` exits with its child): the rest goes too.
      this.#dropped += batch.length + this.#queue.splice(0).length;
      return;
    }
    this.#pausedUntil = Date.now() + wait;
    this.#queue.unshift(...batch);
    // Pushed meanwhile beyond the bound: the newest go, as they would have on arrival.
    const excess = this.#queue.length - this.#maxQueue;
    if (excess > 0) this.#dropped += this.#queue.splice(this.#maxQueue, excess).length;
  }

  /** Sends everything queued (one batch at a time), then stops; reports what was delivered and dropped. */
  async close(): Promise<ShipmentReport> {
    clearInterval(this.#timer);
    // A batch in flight when closing began may still be put back by a rate limit.
    await this.#inFlight;
    this.#closing = true;
    while (this.#inFlight || this.#queue.length > 0) await this.#ship();
    return { delivered: this.#delivered, dropped: this.#dropped, rateLimited: this.#rateLimited };
  }
}
