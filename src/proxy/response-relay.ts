/**
 * Relays one upstream answer (undici's dispatch callbacks) to the child's response. A small
 * unencoded answer that carries secrets is scrubbed whole and sent with its exact Content-Length in
 * one write; any other answer streams, through the scrubber (decoding it first) when it carries
 * secrets, with backpressure from the child back to the upstream socket.
 */
import type http from "node:http";
import { finished, type Writable } from "node:stream";
import type { Dispatcher } from "undici";
import { headersForChild, headersFromRaw, type ResponseHeaders } from "./headers.ts";
import { upstreamFailure, writeProxyError } from "./proxy-errors.ts";
import { pump } from "./pump.ts";
import { bufferScrubber, isIdentityEncoding, scrubbedBody } from "./scrub.ts";
import type { Outcome } from "./server.ts";

/**
 * An unencoded response body of at most this many bytes, announced with its length or arrived
 * with its headers, is scrubbed whole and sent with its exact Content-Length in one write (a
 * streamed one goes chunked).
 */
export const WHOLE_BODY_LIMIT = 64 * 1024;

/** A single header value; a repeated one (ambiguous for framing and encoding) as one joined string. */
function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The Content-Length an answer announced, if any. */
function announcedLength(headers: ResponseHeaders): number | undefined {
  const length = headers["content-length"];
  return typeof length === "string" && /^\d{1,15}$/.test(length) ? Number(length) : undefined;
}

export interface RelayOptions {
  response: http.ServerResponse;
  method: string;
  /** The host and port the child asked for, named in svc's 502 when the upstream fails. */
  host: string;
  port: number;
  /** Values the child must never see. */
  secrets: readonly string[];
  /** Reports the outcome (once; later calls are ignored by the caller). */
  finish(outcome: Omit<Outcome, "durationMs">): void;
}

type Mode =
  /** No final answer yet. */
  | { kind: "waiting" }
  /** Collecting a body to send whole (`decided` false while it may still turn out to stream). */
  | { kind: "collecting"; chunks: Buffer[]; bytes: number; decided: boolean }
  /** Streaming into `sink` (the scrubber, or the response itself). */
  | { kind: "streaming"; sink: Writable }
  /** Answered (or refused, or failed): anything more the upstream sends is read and dropped. */
  | { kind: "done" };

export class ResponseRelay implements Dispatcher.DispatchHandlers {
  readonly #options: RelayOptions;
  #mode: Mode = { kind: "waiting" };
  #status = 502;
  #headers: ResponseHeaders = {};
  #abort: ((error?: Error) => void) | undefined;
  #resume: (() => void) | undefined;

  constructor(options: RelayOptions) {
    this.#options = options;
    // A child that goes away stops the upstream exchange too.
    options.response.once("close", () => {
      if (!options.response.writableFinished) this.#abort?.(new Error("the client closed the connection"));
    });
  }

  onConnect(abort: (error?: Error) => void): void {
    this.#abort = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    // 1xx informational answers (100 Continue, 103 Early Hints) precede the final one.
    if (status < 200) return true;
    this.#status = status;
    this.#headers = headersFromRaw(raw);
    this.#resume = resume;
    const { secrets } = this.#options;
    if (secrets.length === 0 || !isIdentityEncoding(single(this.#headers["content-encoding"]))) {
      this.#startStreaming([]);
      return true;
    }
    const announced = announcedLength(this.#headers);
    if (announced !== undefined && announced > WHOLE_BODY_LIMIT) {
      this.#startStreaming([]);
      return true;
    }
    this.#mode = { kind: "collecting", chunks: [], bytes: 0, decided: announced !== undefined };
    if (announced === undefined) {
      // No length announced (chunked): a body that came with its headers is still sent whole; one
      // still arriving once this read is parsed (a stream of events) starts flowing then.
      setImmediate(() => {
        if (this.#mode.kind === "collecting" && !this.#mode.decided) this.#startStreaming(this.#mode.chunks);
      });
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    const mode = this.#mode;
    if (mode.kind === "collecting") {
      mode.chunks.push(chunk);
      mode.bytes += chunk.length;
      if (!mode.decided && mode.bytes > WHOLE_BODY_LIMIT) this.#startStreaming(mode.chunks);
      return true;
    }
    if (mode.kind === "streaming") {
      if (mode.sink.write(chunk)) return true;
      mode.sink.once("drain", () => this.#resume?.());
      return false;
    }
    return true;
  }

  onComplete(): void {
    const mode = this.#mode;
    if (mode.kind === "collecting") this.#sendWhole(mode.chunks);
    else if (mode.kind === "streaming") mode.sink.end();
    this.#mode = { kind: "done" };
  }

  onError(error: Error): void {
    const { response, finish } = this.#options;
    const mode = this.#mode;
    if (mode.kind === "streaming" && mode.sink !== response) mode.sink.destroy(error);
    if (response.destroyed) {
      finish({ error: error.message });
    } else if (!response.headersSent) {
      // Nothing has gone to the child yet: a refused, cut or failed answer becomes svc's 502.
      const failure = upstreamFailure(this.#options.host, this.#options.port, error);
      writeProxyError(response, failure);
      finish({ status: failure.status, error: error.message });
    } else {
      response.destroy(error);
      finish({ error: error.message });
    }
    this.#mode = { kind: "done" };
  }

  /** Sends the headers and streams the body from here on, starting with `held`. */
  #startStreaming(held: readonly Buffer[]): void {
    const { response, secrets, finish } = this.#options;
    const headers = headersForChild(this.#headers, secrets);
    const status = this.#status;
    let sink: Writable = response;
    if (secrets.length > 0) {
      const encoding = single(this.#headers["content-encoding"]);
      const scrub = scrubbedBody(encoding, secrets);
      if (!scrub.scrubbed) {
        // A body svc cannot decode could echo the secret unseen: refuse it rather than pass it on.
        this.#mode = { kind: "done" };
        const message = `svc proxy cannot inspect a response encoded as "${encoding}"`;
        writeProxyError(response, { status: 502, code: "UnreadableResponseEncoding", message });
        finish({ status: 502, error: message });
        return;
      }
      // A scrubbed body may change length, and a decoded one is sent as identity.
      delete headers["content-length"];
      if (scrub.contentEncoding === undefined) delete headers["content-encoding"];
      sink = scrub.transform;
      pump(scrub.transform, response, (error) => {
        finish({ status, ...(error ? { error: error.message } : {}) });
      });
    } else {
      finished(response, (error) => finish({ status, ...(error ? { error: error.message } : {}) }));
    }
    response.writeHead(status, headers);
    this.#mode = { kind: "streaming", sink };
    for (const chunk of held) sink.write(chunk);
  }

  /** A small answer, complete: scrubbed in memory and sent with its exact Content-Length. */
  #sendWhole(chunks: readonly Buffer[]): void {
    const { response, secrets, method, finish } = this.#options;
    const status = this.#status;
    const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const body = bufferScrubber(secrets)(whole);
    const headers = headersForChild(this.#headers, secrets);
    // A HEAD (or 204, 304) answer announces a length it does not carry, which scrubbing may change.
    if (method === "HEAD" || status === 204 || status === 304) delete headers["content-length"];
    else headers["content-length"] = String(body.length);
    response.writeHead(status, headers);
    response.end(body);
    finished(response, (sent) => finish({ status, ...(sent ? { error: sent.message } : {}) }));
  }
}
