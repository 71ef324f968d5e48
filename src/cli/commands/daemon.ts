import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { type Command, InvalidArgumentError } from "commander";
import { updateClientConfig } from "../../client/config.ts";
import { homeLayout, resolveHome } from "../../core/paths.ts";
import type { CliContext } from "../context.ts";
import {
  type DaemonStatus,
  daemonStatus,
  foreignDaemonError,
  startDetached,
  stopDaemon,
} from "../daemon-control.ts";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1"]);

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidArgumentError("must be a port number 0-65535");
  return port;
}

/** `10.0.0.5, 10.1.0.0/16` → addresses; each must be an IP or an IP/prefix. */
export function parseAddressList(value: string): string[] {
  const addresses = value
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
  for (const address of addresses) {
    const [ip, prefix, extra] = address.split("/");
    const family = isIP(ip ?? "");
    const bits = family === 6 ? 128 : 32;
    if (
      !family ||
      extra !== undefined ||
      (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits))
    ) {
      throw new InvalidArgumentError(`"${address}" is not an IP address or CIDR range`);
    }
  }
  return addresses;
}

export interface ServeOptions {
  host: string;
  port: number;
  publicUrl?: string;
  trustedProxies?: string[];
}

export async function runServe(context: CliContext, options: ServeOptions): Promise<void> {
  if (!LOOPBACK_HOSTS.has(options.host)) {
    context.out.warn(
      `binding ${options.host}: the daemon is reachable from other machines; put it behind TLS and a reverse proxy`,
    );
  }
  // Loaded only here: the daemon's dependencies (Fastify, SQLite) would slow every other command.
  const { serveForever } = await import("../../daemon/serve.ts");
  await serveForever({
    layout: homeLayout(resolveHome(context.io.env)),
    config: {
      host: options.host,
      port: options.port,
      publicUrl: options.publicUrl ?? context.io.env.SVC_PUBLIC_URL,
      trustedProxies: options.trustedProxies ?? parseAddressList(context.io.env.SVC_TRUSTED_PROXIES ?? ""),
    },
    env: context.io.env,
  });
}

export interface StartOptions {
  host?: string;
  port?: number;
}

/**
 * `daemon start [--host H] [--port N]`: the address given is saved as `daemon_base_url`, so later
 * commands of this home follow the daemon there (unless SVC_BASE_URL says otherwise).
 */
export async function runStart(context: CliContext, options: StartOptions = {}): Promise<void> {
  const baseUrl = startUrl(context.baseUrl, options);
  const current = await daemonStatus(context.layout, baseUrl);
  if (current.running) {
    // One home, one daemon: asked for another address, say how to move it rather than start a second.
    const elsewhere =
      current.url !== baseUrl ? ` at ${current.url}; \`svc daemon restart\` with --port/--host moves it` : "";
    printStatus(context, current, `already running${elsewhere}`);
    return;
  }
  if (current.port_taken_by) {
    throw foreignDaemonError(context.layout, baseUrl, current.port_taken_by);
  }
  const status = await startDetached(context.layout, baseUrl, context.io.env);
  if (options.host !== undefined || options.port !== undefined) {
    updateClientConfig(context.layout.clientConfig, { daemon_base_url: status.url });
  }
  printStatus(context, status, "started");
}

function startUrl(configured: string, options: StartOptions): string {
  if (options.host === undefined && options.port === undefined) return configured;
  const url = new URL(configured);
  const host = options.host ?? url.hostname.replace(/^\[|\]$/g, "");
  const port = options.port ?? (Number(url.port) || 7998);
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

export async function runStop(context: CliContext): Promise<void> {
  const stopped = await stopDaemon(context.layout);
  const status = stopped ? undefined : await daemonStatus(context.layout, context.baseUrl);
  if (context.out.options.json) {
    context.out.json({ stopped, ...(status?.port_taken_by ? { port_taken_by: status.port_taken_by } : {}) });
    return;
  }
  if (stopped) context.out.status("daemon stopped");
  else context.out.status(`no daemon of this home was running${takenNote(status)}`);
}

function takenNote(status: DaemonStatus | undefined): string {
  if (status?.port_taken_by === "another_svc_home")
    return `; ${status.url} is answered by the daemon of another SVC_HOME (left alone)`;
  if (status?.port_taken_by === "not_svc") return `; ${status.url} is taken by something that is not svc`;
  return "";
}

export async function runStatus(context: CliContext): Promise<void> {
  const status = await daemonStatus(context.layout, context.baseUrl);
  printStatus(context, status);
}

export function runLogs(context: CliContext, lines: number): void {
  let text = "";
  try {
    text = readFileSync(context.layout.daemonLog, "utf8");
  } catch {
    context.out.status(`no daemon log yet at ${context.layout.daemonLog}`);
    return;
  }
  const all = text.split("\n").filter(Boolean);
  for (const line of all.slice(-lines)) context.out.line(line);
}

function printStatus(
  context: CliContext,
  status: Awaited<ReturnType<typeof daemonStatus>>,
  note?: string,
): void {
  if (context.out.options.json) {
    context.out.json(status);
    return;
  }
  if (note) context.out.status(`daemon ${note}`);
  if (!status.running && status.port_taken_by)
    context.out.status(`this home's daemon is not running${takenNote(status)}`);
  context.out.fields([
    ["status", status.running ? "running" : "stopped"],
    ["url", status.url],
    ["pid", status.pid?.toString()],
    ["version", status.version],
    ["uptime", status.uptime_seconds === undefined ? undefined : `${status.uptime_seconds}s`],
  ]);
}

export function registerDaemonCommands(program: Command, contextFor: (command: Command) => CliContext): void {
  const daemon = program.command("daemon").description("Run and manage the svc daemon");
  daemon
    .command("serve")
    .description("Run the daemon in the foreground")
    .option("--host <host>", "address to bind (non-loopback needs this flag explicitly)", "127.0.0.1")
    .option("--port <port>", "port to listen on", parsePort, 7998)
    .option("--public-url <url>", "public URL of a hosted daemon (callbacks, allowed Host header)")
    .option(
      "--trusted-proxies <addresses>",
      "comma-separated IPs or CIDR ranges of reverse proxies whose X-Forwarded-* headers count",
      parseAddressList,
    )
    .action(async (options: ServeOptions, command: Command) => runServe(contextFor(command), options));
  daemon
    .command("start")
    .description("Start the daemon in the background and wait until it answers")
    .option("--host <host>", "address to bind (saved for later commands)")
    .option("--port <port>", "port to listen on (saved for later commands)", parsePort)
    .action(async (options: StartOptions, command: Command) => runStart(contextFor(command), options));
  daemon
    .command("stop")
    .description("Stop the background daemon (SIGTERM, then SIGKILL after 10 s)")
    .action(async (_options, command: Command) => runStop(contextFor(command)));
  daemon
    .command("restart")
    .description("Stop, then start the background daemon")
    .option("--host <host>", "address to bind (saved for later commands)")
    .option("--port <port>", "port to listen on (saved for later commands)", parsePort)
    .action(async (options: StartOptions, command: Command) => {
      const context = contextFor(command);
      await stopDaemon(context.layout);
      await runStart(context, options);
    });
  daemon
    .command("status")
    .description("Show pid, URL, version and uptime of the daemon")
    .action(async (_options, command: Command) => runStatus(contextFor(command)));
  daemon
    .command("logs")
    .description("Print the end of the daemon log")
    .option("-n, --lines <count>", "number of lines", (value) => parseCount(value), 50)
    .action((options: { lines: number }, command: Command) => runLogs(contextFor(command), options.lines));
}

export function parseCount(value: string): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1) throw new InvalidArgumentError("must be a positive integer");
  return count;
}
