import type { ExternalAuditEvent } from "../api/audit.ts";
import { MAX_AUDIT_BATCH } from "../api/audit.ts";

export interface AuditShipperOptions {
  /** Delivers one batch (`POST /audit/events`). */
  send: (events: ExternalAuditEvent[]) => Promise<void>;
  /** Events kept while the daemon is slow; beyond this they are dropped and counted. */
  maxQueue?: number;
  batchSize?: number;
  intervalMs?: number;
}

/**
 * Ships the proxy's external audit events to the daemon in the background. Traffic never waits
 * for it: `push` only appends to a bounded queue, and one batch is in flight at a time. Events
 * that do not fit, or whose batch the daemon refuses, are counted as dropped.
 */
export class AuditShipper {
  readonly #send: AuditShipperOptions["send"];
  readonly #maxQueue: number;
  readonly #batchSize: number;
  readonly #timer: NodeJS.Timeout;
  #queue: ExternalAuditEvent[] = [];
  #inFlight: Promise<void> | undefined;
  #delivered = 0;
  #dropped = 0;

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
    const batch = this.#queue.splice(0, this.#batchSize);
    this.#inFlight = this.#send(batch)
      .then(
        () => {
          this.#delivered += batch.length;
        },
        () => {
          this.#dropped += batch.length;
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
      });
    return this.#inFlight;
  }

  /** Sends everything queued (one batch at a time), then stops; reports what was delivered and dropped. */
  async close(): Promise<{ delivered: number; dropped: number }> {
    clearInterval(this.#timer);
    while (this.#inFlight || this.#queue.length > 0) await this.#ship();
    return { delivered: this.#delivered, dropped: this.#dropped };
  }
}
