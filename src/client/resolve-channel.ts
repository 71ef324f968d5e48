/**
 * The proxy's side of the credential channel: one connection to the daemon, opened with a PoP
 * token, over which each resolve is one JSON line. It spares every proxied request a PoP signature,
 * its verification and an HTTP exchange; the daemon still resolves every request afresh, and this
 * holds nothing beyond the answer it hands back.
 */
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import {
  CHANNEL_PATH,
  CHANNEL_PROTOCOL,
  type ChannelAnswer,
  type ResolvedCredential,
  type ResolveRequest,
} from "../api/credentials.ts";
import { DaemonUnavailableError, errorFromBody } from "../core/errors.ts";
import type { DaemonClient } from "./daemon-client.ts";

/** How long opening the channel may take before the resolve falls back to plain HTTP. */
const OPEN_TIMEOUT_MS = 5_000;

interface Pending {
  resolve(credential: ResolvedCredential): void;
  reject(error: Error): void;
}

/** Why the channel could not be opened: `permanent` when the daemon (or a proxy before it) refused the upgrade. */
type OpenFailure = { permanent: boolean };

export class ResolveChannel {
  readonly #client: DaemonClient;
  #socket: Duplex | undefined;
  #opening: Promise<Duplex | OpenFailure> | undefined;
  /** Set once the daemon refused the upgrade: plain HTTP from then on. */
  #refused = false;
  #closed = false;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();

  constructor(client: DaemonClient) {
    this.#client = client;
  }

  /**
   * The daemon's answer over the channel, or undefined when no channel could be opened (the caller
   * then resolves over plain HTTP, which reports an unreachable daemon in its own words).
   */
  async resolve(request: ResolveRequest): Promise<ResolvedCredential | undefined> {
    if (this.#refused || this.#closed) return undefined;
    const socket = this.#socket ?? (await this.#connect());
    if (!socket) return undefined;
    const id = this.#nextId++;
    return new Promise<ResolvedCredential>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      socket.write(`${JSON.stringify({ id, resolve: request })}\n`);
    });
  }

  close(): void {
    this.#closed = true;
    this.#socket?.destroy();
  }

  async #connect(): Promise<Duplex | undefined> {
    this.#opening ??= this.#open().finally(() => {
      this.#opening = undefined;
    });
    const opened = await this.#opening;
    if ("permanent" in opened) {
      if (opened.permanent) this.#refused = true;
      return undefined;
    }
    return opened;
  }

  #open(): Promise<Duplex | OpenFailure> {
    const base = new URL(this.#client.baseUrl);
    const transport = base.protocol === "https:" ? https : http;
    return new Promise((settle) => {
      const request = transport.request({
        hostname: base.hostname,
        port: base.port || (base.protocol === "https:" ? 443 : 80),
        method: "GET",
        path: `${base.pathname.replace(/\/$/, "")}${CHANNEL_PATH}`,
        headers: {
          connection: "Upgrade",
          upgrade: CHANNEL_PROTOCOL,
          authorization: this.#client.popAuthorization("GET", CHANNEL_PATH),
        },
        agent: false,
        timeout: OPEN_TIMEOUT_MS,
      });
      request.once("upgrade", (_response, socket, head) => {
        if (this.#closed) {
          socket.destroy();
          settle({ permanent: true });
          return;
        }
        this.#attach(socket, head);
        settle(socket);
      });
      request.once("response", (response) => {
        response.resume();
        // 401 (a token from before a restart) is worth another try; anything else is a refusal.
        settle({ permanent: response.statusCode !== 401 });
      });
      request.once("timeout", () => request.destroy());
      request.once("error", () => settle({ permanent: false }));
      request.end();
    });
  }

  #attach(socket: Duplex, head: Buffer): void {
    this.#socket = socket;
    // One small line each way per request: Nagle's algorithm would hold each for an ACK.
    (socket as Partial<Socket>).setNoDelay?.(true);
    let buffered = head.toString("utf8");
    const consume = () => {
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        this.#answer(buffered.slice(0, newline));
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf("\n");
      }
    };
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      consume();
    });
    socket.on("error", () => socket.destroy());
    socket.once("close", () => {
      if (this.#socket === socket) this.#socket = undefined;
      const error = new DaemonUnavailableError("the daemon closed the credential channel");
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    });
    consume();
  }

  #answer(line: string): void {
    let answer: ChannelAnswer;
    try {
      answer = JSON.parse(line) as ChannelAnswer;
    } catch {
      this.#socket?.destroy();
      return;
    }
    const pending = this.#pending.get(answer.id);
    if (!pending) return;
    this.#pending.delete(answer.id);
    if ("credential" in answer) pending.resolve(answer.credential);
    else pending.reject(errorFromBody(answer.error, "the daemon could not resolve the credential"));
  }
}
