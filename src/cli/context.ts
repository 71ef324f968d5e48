import type { Health } from "../api/health.ts";
import { resolveBaseUrl } from "../client/base-url.ts";
import { readClientConfig } from "../client/config.ts";
import type { DaemonClient } from "../client/daemon-client.ts";
import { activeIdentity, clientFor } from "../client/session.ts";
import { type HomeLayout, homeLayout, resolveHome } from "../core/paths.ts";
import type { LocalIdentity } from "../identity/identity-files.ts";
import { ensureDaemon } from "./daemon-control.ts";
import { DebugLog } from "./debug-log.ts";
import { Output } from "./output.ts";
import { type Prompter, terminalPrompter } from "./prompt.ts";

export interface GlobalOptions {
  json?: boolean;
  quiet?: boolean;
  color?: boolean;
  verbose?: boolean;
  logFile?: string;
}

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  stdinIsTty: boolean;
  stdoutIsTty: boolean;
  /** How to ask for input; the terminal (@clack/prompts, stdin) unless a test supplies one. */
  prompter?: Prompter;
}

/** What every command's run function gets: output, paths, and a lazily connected daemon client. */
export class CliContext {
  readonly io: CliIo;
  readonly layout: HomeLayout;
  readonly out: Output;
  readonly log: DebugLog;
  #client?: Promise<DaemonClient>;
  /** The daemon's health record as the connection check saw it (absent when the daemon was just started). */
  health: Health | undefined;

  constructor(io: CliIo, options: GlobalOptions) {
    this.io = io;
    this.layout = homeLayout(resolveHome(io.env));
    const color = options.color !== false && !io.env.NO_COLOR && io.stdoutIsTty;
    this.out = new Output(
      { json: Boolean(options.json), quiet: Boolean(options.quiet), color },
      io.stdout,
      io.stderr,
    );
    this.log = new DebugLog({
      path: options.logFile === undefined ? this.layout.clientLog : options.logFile,
      verbose: Boolean(options.verbose),
      stderr: io.stderr,
    });
  }

  get prompter(): Prompter {
    return this.io.prompter ?? terminalPrompter;
  }

  get baseUrl(): string {
    return resolveBaseUrl(this.io.env, readClientConfig(this.layout.clientConfig));
  }

  identity(): LocalIdentity {
    return activeIdentity(this.layout);
  }

  /** A client signing as the active identity, with the local daemon started when needed. */
  daemon(): Promise<DaemonClient> {
    this.#client ??= this.daemonAs(() => this.identity());
    return this.#client;
  }

  /**
   * A client signing as `identity`, with the local daemon started when needed; requests are
   * traced. Given a loader, it loads the identity while the daemon answers the health probe:
   * reading the key (node:crypto with it) takes about as long as that round trip.
   */
  async daemonAs(signer: LocalIdentity | (() => LocalIdentity)): Promise<DaemonClient> {
    const baseUrl = this.baseUrl;
    this.log.debug("connecting", { base_url: baseUrl });
    const ready = ensureDaemon(this.layout, baseUrl, this.io.env, {
      explicit: Boolean(this.io.env.SVC_BASE_URL),
    });
    let identity: LocalIdentity;
    if (typeof signer === "function") {
      // Awaited below; this only keeps a failed load from leaving the probe's failure unhandled.
      ready.catch(() => {});
      // One turn of the event loop connects and sends the probe before the load takes the thread.
      await new Promise((resolve) => setImmediate(resolve));
      identity = signer();
    } else {
      identity = signer;
    }
    this.health = await ready;
    return clientFor(this.layout, this.io.env, identity, {
      baseUrl,
      trace: (event) => this.log.debug("daemon request", event),
      // A command sends a few requests and exits; `svc run`'s proxy asks for keep-alive itself.
      keepAlive: false,
      // A request refused because the identity is not claimed yet waits for its claim link (the
      // claim code, with its browser and progress helpers, loads only then).
      claim: async () => (await import("./claim.ts")).claimOnRefusal(this, identity, baseUrl)(),
    });
  }
}
