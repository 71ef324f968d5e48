import type { KeyObject } from "node:crypto";
import { createRequire } from "node:module";
import { monotonicMs } from "../core/clock.ts";
import {
  AuthenticationFailedError,
  DaemonUnavailableError,
  errorFromBody,
  OperationNotAllowedError,
  type SvcError,
  UnexpectedError,
} from "../core/errors.ts";
import { signPopToken } from "../identity/pop-sign.ts";
import { plainHttpExchange } from "./plain-http.ts";

export interface ClientIdentity {
  handle: string;
  did: string;
  privateKey: KeyObject;
}

export interface DaemonClientOptions {
  baseUrl: string;
  identity?: ClientIdentity;
  /**
   * Registers the identity with the daemon (idempotent). Called once when a request is refused as
   * unauthenticated, since the usual cause is a daemon that does not know the identity yet.
   */
  register?: () => Promise<void>;
  /**
   * Called when a request is refused as not allowed (the usual cause on a remote daemon: the
   * identity is registered but no account has claimed it yet). Resolves `true` once the identity
   * is claimed, and the request is sent once more; `false` leaves the refusal as it was.
   * Concurrent refusals share one call.
   */
  claim?: () => Promise<boolean>;
  timeoutMs?: number;
  /** Called after every exchange with metadata only (never headers or bodies): for debug logs. */
  trace?: (event: { method: string; path: string; status: number; ms: number }) => void;
  /**
   * `true` (the default): connections stay open for the next request, as a long-lived process
   * wants (the proxy). `false`: each request to a plain-http daemon opens its own connection over
   * node:net (plain-http.ts), which spares a short-lived process (a CLI command) loading node:http.
   */
  keepAlive?: boolean;
}

export interface RequestOptions {
  body?: unknown;
  /** `pop` (default), `none`, or `self-signed` (the same token; the daemon checks it against `iss`). */
  auth?: "pop" | "none";
  timeoutMs?: number;
  /** `false` keeps the exchange out of `trace`: the proxy's per-request resolves would add a line each. */
  trace?: boolean;
}

// require(), not import: Node's ESM view of node:http reads every export once, and one of them is a
// lazy getter that loads undici (fetch, WebSocket), about 60 ms of every CLI start-up. Each loads on
// its first use: a CLI command with a plain-http daemon needs neither (plain-http.ts), and TLS alone
// costs about 15 ms.
const require = createRequire(import.meta.url);

interface Transport {
  request: typeof import("node:http").request;
  agent: import("node:http").Agent;
}

const transports = new Map<string, Transport>();

function transportFor(protocol: string): Transport {
  let transport = transports.get(protocol);
  if (!transport) {
    const module: typeof import("node:http") = require(protocol === "https:" ? "node:https" : "node:http");
    transport = { request: module.request, agent: new module.Agent({ keepAlive: true, maxSockets: 64 }) };
    transports.set(protocol, transport);
  }
  return transport;
}

/**
 * The typed HTTP client of the daemon, shared by the CLI and the proxy. Signs every protected
 * request with a fresh PoP token and turns `{error, message}` bodies back into error classes.
 */
export class DaemonClient {
  readonly baseUrl: string;
  readonly identity: ClientIdentity | undefined;
  readonly #register: (() => Promise<void>) | undefined;
  readonly #claim: (() => Promise<boolean>) | undefined;
  #claiming: Promise<boolean> | undefined;
  readonly #timeoutMs: number;
  readonly #url: URL;
  readonly #trace: DaemonClientOptions["trace"] | undefined;
  readonly #options: DaemonClientOptions;
  /** The registration under way: parallel requests refused as unauthenticated all wait for it. */
  #registering: Promise<void> | undefined;

  constructor(options: DaemonClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.identity = options.identity;
    this.#register = options.register;
    this.#claim = options.claim;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#url = new URL(this.baseUrl);
    this.#trace = options.trace;
    this.#options = options;
  }

  /** This client with connections kept alive, for a process that goes on sending (the proxy of `svc run`). */
  withKeepAlive(): DaemonClient {
    return this.#options.keepAlive === false ? new DaemonClient({ ...this.#options, keepAlive: true }) : this;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    try {
      return await this.#registered<T>(method, path, options);
    } catch (error) {
      if (!(error instanceof OperationNotAllowedError) || !this.#claim || options.auth === "none")
        throw error;
      this.#claiming ??= this.#claim().finally(() => {
        this.#claiming = undefined;
      });
      if (!(await this.#claiming)) throw error;
      return this.#send<T>(method, path, options);
    }
  }

  /**
   * Sends; a refusal as unauthenticated registers the identity and sends again. Registration is
   * single-flight: requests refused while it runs wait for the same one, then send again.
   */
  async #registered<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    try {
      return await this.#send<T>(method, path, options);
    } catch (error) {
      const register = this.#register;
      if (!(error instanceof AuthenticationFailedError) || !register || options.auth === "none") throw error;
      this.#registering ??= register().finally(() => {
        this.#registering = undefined;
      });
      await this.#registering;
      return this.#send<T>(method, path, options);
    }
  }

  /**
   * `PoP <jwt>` for one bodiless request to `path`, for a caller that opens its own connection (the
   * credential channel's upgrade); like every token, it is good for one use.
   */
  popAuthorization(method: string, path: string): string {
    if (!this.identity) throw new UnexpectedError("this request needs an identity to sign it");
    const pathAndQuery = `${this.#url.pathname.replace(/\/$/, "")}${path}`;
    return `PoP ${signPopToken({ ...this.identity, method, pathAndQuery })}`;
  }

  get<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>("GET", path, options);
  }

  post<T>(path: string, body?: unknown, options?: RequestOptions): Promise<T> {
    return this.request<T>("POST", path, { ...options, body });
  }

  async #send<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const body = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    const pathAndQuery = `${this.#url.pathname.replace(/\/$/, "")}${path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (body) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(body.length);
    }
    const signed = (options.auth ?? "pop") === "pop";
    const sign = () => {
      if (!this.identity) throw new UnexpectedError("this request needs an identity to sign it");
      headers.authorization = `PoP ${signPopToken({ ...this.identity, method, pathAndQuery, ...(body ? { body } : {}) })}`;
    };
    if (signed) sign();
    const started = monotonicMs();
    let { status, text, retryAfter } = await this.#exchange(
      method,
      pathAndQuery,
      headers,
      body,
      options.timeoutMs,
    );
    if (signed && status === 401 && retryAfter !== undefined) {
      // The daemon restarted after this token was signed (docs/security.md): a token stamped in a
      // later whole second is past its horizon, so wait for the clock's next second and sign again.
      await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 10));
      sign();
      ({ status, text, retryAfter } = await this.#exchange(
        method,
        pathAndQuery,
        headers,
        body,
        options.timeoutMs,
      ));
    }
    if (options.trace !== false) {
      this.#trace?.({ method, path: pathAndQuery, status, ms: Math.round(monotonicMs() - started) });
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new UnexpectedError(
        `the daemon at ${this.baseUrl} answered ${status} with a body that is not JSON`,
      );
    }
    if (status >= 400) {
      const error = errorFromBody(parsed, `the daemon answered HTTP ${status}`);
      const wait = Number(retryAfter);
      if (retryAfter !== undefined && Number.isFinite(wait) && wait >= 0) error.retryAfterSeconds = wait;
      throw error;
    }
    return parsed as T;
  }

  #exchange(
    method: string,
    pathAndQuery: string,
    headers: Record<string, string>,
    body: Buffer | undefined,
    timeoutMs = this.#timeoutMs,
  ): Promise<{ status: number; text: string; retryAfter: string | undefined }> {
    const secure = this.#url.protocol === "https:";
    const hostname = this.#url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(this.#url.port || (secure ? 443 : 80));
    if (!secure && this.#options.keepAlive === false) {
      return plainHttpExchange({
        hostname,
        port,
        host: this.#url.host,
        method,
        path: pathAndQuery,
        headers,
        body,
        timeoutMs,
      })
        .then((response) => ({
          status: response.status,
          text: response.body.toString("utf8"),
          retryAfter: response.headers["retry-after"],
        }))
        .catch((error: Error) => {
          throw this.#unavailable(error);
        });
    }
    const transport = transportFor(this.#url.protocol);
    return new Promise((resolve, reject) => {
      const request = transport.request(
        {
          protocol: this.#url.protocol,
          hostname,
          port,
          method,
          path: pathAndQuery,
          headers,
          agent: transport.agent,
          timeout: timeoutMs,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              text: Buffer.concat(chunks).toString("utf8"),
              retryAfter: response.headers["retry-after"],
            }),
          );
          response.on("error", (error) => reject(this.#unavailable(error)));
        },
      );
      request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on("error", (error) => reject(this.#unavailable(error)));
      request.end(body);
    });
  }

  #unavailable(error: Error): SvcError {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code ?? error.message;
    return new DaemonUnavailableError(
      `the svc daemon at ${this.baseUrl} is not reachable (${reason}); start it with \`svc daemon start\` or check SVC_BASE_URL`,
      { cause: error },
    );
  }
}
