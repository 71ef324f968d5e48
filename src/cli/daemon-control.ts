import { closeSync, openSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Health } from "../api/health.ts";
import { isLoopbackUrl } from "../client/base-url.ts";
import { DaemonClient } from "../client/daemon-client.ts";
import { monotonicMs } from "../core/clock.ts";
import { type DaemonState, isAlive, isDaemonProcess, readDaemonState } from "../core/daemon-state.ts";
import { DaemonUnavailableError, SvcError } from "../core/errors.ts";
import { withFileLock } from "../core/file-lock.ts";
import { readInstanceId } from "../core/instance-id.ts";
import type { HomeLayout } from "../core/paths.ts";
import { ensurePrivateDir } from "../core/secure-fs.ts";
import { VERSION } from "../core/version.ts";

// The `svc` launcher beside this module: bin.ts in a checkout, the compiled bin.js in the package.
const BIN = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./bin.ts" : "./bin.js", import.meta.url),
);
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;

export interface DaemonStatus {
  running: boolean;
  url: string;
  pid?: number;
  version?: string;
  started_at?: string;
  uptime_seconds?: number;
  /** When this home's daemon is not running but something else answers at `url`. */
  port_taken_by?: "another_svc_home" | "not_svc";
}

/** What answers at a daemon URL, seen from one home. */
export type Occupant =
  | { kind: "none" }
  | { kind: "own"; health: Health }
  | { kind: "other_home"; health: Health }
  | { kind: "not_svc"; reason: string };

/** Answers `/api/health` within a short timeout, or undefined (nothing there, or not svc). */
export async function probeHealth(baseUrl: string, timeoutMs = 1500): Promise<Health | undefined> {
  const answer = await probe(baseUrl, timeoutMs);
  return "health" in answer ? answer.health : undefined;
}

/** A busy daemon (a loaded machine) may take longer than a probe's first timeout to answer. */
const PATIENT_PROBE_MS = 5000;

async function probe(
  baseUrl: string,
  timeoutMs: number,
): Promise<{ health: Health } | { refused: true } | { strange: string; silent?: true }> {
  const started = monotonicMs();
  try {
    const body = await new DaemonClient({ baseUrl, keepAlive: false }).get<Partial<Health>>("/api/health", {
      auth: "none",
      timeoutMs,
    });
    if (body?.status === "ok" && typeof body.version === "string") return { health: body as Health };
    return { strange: "its /api/health is not an svc health record" };
  } catch (error) {
    const code = ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    if (error instanceof DaemonUnavailableError && (code === "ECONNREFUSED" || code === "ENOTFOUND"))
      return { refused: true };
    const silent = code === undefined && monotonicMs() - started >= timeoutMs;
    return { strange: error instanceof Error ? error.message : String(error), ...(silent ? { silent } : {}) };
  }
}

/** Whether the svc daemon of this home, another home's, something else, or nothing answers at `baseUrl`. */
export async function occupantOf(layout: HomeLayout, baseUrl: string, timeoutMs = 1500): Promise<Occupant> {
  let answer = await probe(baseUrl, timeoutMs);
  // No answer in time is not yet proof of a stranger: ask once more, patiently.
  if ("silent" in answer && timeoutMs < PATIENT_PROBE_MS) answer = await probe(baseUrl, PATIENT_PROBE_MS);
  if ("refused" in answer) return { kind: "none" };
  if ("strange" in answer) return { kind: "not_svc", reason: answer.strange };
  const { health } = answer;
  const own = health.instance_id
    ? health.instance_id === readInstanceId(layout.instanceId)
    : liveState(layout)?.url === baseUrl; // a daemon older than instance ids: trust the pid file
  return own ? { kind: "own", health } : { kind: "other_home", health };
}

export type PortTakenBy = NonNullable<DaemonStatus["port_taken_by"]>;

function takenBy(occupant: Occupant): PortTakenBy {
  return occupant.kind === "other_home" ? "another_svc_home" : "not_svc";
}

/** Why no daemon is started at `baseUrl` while this home's daemon runs at `runningAt`. */
function elsewhereError(
  layout: HomeLayout,
  baseUrl: string,
  runningAt: string,
  options: EnsureDaemonOptions,
): SvcError {
  return new DaemonUnavailableError(
    `nothing answers at ${baseUrl}${options.explicit ? " (SVC_BASE_URL)" : ""}, and the daemon of ${layout.home} runs at ${runningAt}; a home has one daemon, so no second one is started. Set SVC_BASE_URL to ${runningAt} (or unset it), or move the daemon with \`svc daemon restart --port <port>\``,
  );
}

/** Why this home will not use what answers at `baseUrl`, and what to do instead. */
export function foreignDaemonError(layout: HomeLayout, baseUrl: string, taken: PortTakenBy): SvcError {
  const who =
    taken === "another_svc_home" ? "the svc daemon of another SVC_HOME" : "something that is not svc";
  return new DaemonUnavailableError(
    `${baseUrl} is taken by ${who}, so ${layout.home} will not use it. Start this home's daemon on another port with \`svc daemon start --port <port>\` (later commands follow it), or set SVC_BASE_URL to the daemon you mean.`,
  );
}

/** This home's daemon per server/daemon.json, when its process still runs; a stale file is removed. */
function liveState(layout: HomeLayout): DaemonState | undefined {
  const state = readDaemonState(layout.daemonState);
  if (state && isDaemonProcess(state.pid)) return state;
  if (state) {
    rmSync(layout.daemonState, { force: true });
    rmSync(layout.daemonPid, { force: true });
  }
  return undefined;
}

/**
 * This home's daemon: the one its pid file names (wherever it listens), else whichever answers at
 * `baseUrl` with this home's instance id (a daemon started in the foreground elsewhere).
 */
export async function daemonStatus(layout: HomeLayout, baseUrl: string): Promise<DaemonStatus> {
  const state = liveState(layout);
  const url = state?.url ?? baseUrl;
  const occupant = await occupantOf(layout, url);
  if (occupant.kind === "own" || state) {
    const version = occupant.kind === "own" ? occupant.health.version : state?.version;
    return {
      running: true,
      url,
      pid: state?.pid,
      version,
      started_at: state?.started_at,
      uptime_seconds: state ? Math.round((Date.now() - Date.parse(state.started_at)) / 1000) : undefined,
    };
  }
  if (occupant.kind === "none") return { running: false, url };
  return { running: false, url, port_taken_by: takenBy(occupant) };
}

function hostAndPort(baseUrl: string): { host: string; port: string } {
  const url = new URL(baseUrl);
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port || "80" };
}

/**
 * Starts `svc daemon serve` detached, logging to server/logs/daemon.log, and waits until this
 * home's daemon answers at `baseUrl`.
 */
export async function startDetached(
  layout: HomeLayout,
  baseUrl: string,
  env: NodeJS.ProcessEnv,
): Promise<DaemonStatus> {
  const { host, port } = hostAndPort(baseUrl);
  ensurePrivateDir(layout.serverLogs);
  // Loaded here: node:child_process costs every other command about 3 ms.
  const { spawn } = await import("node:child_process");
  const log = openSync(layout.daemonLog, "a", 0o600);
  const child = spawn(process.execPath, [BIN, "daemon", "serve", "--host", host, "--port", port], {
    detached: true,
    stdio: ["ignore", log, log],
    env: { ...env, SVC_HOME: layout.home },
  });
  closeSync(log);
  let exited: number | null = null;
  child.once("exit", (code) => {
    exited = code ?? 1;
  });
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const occupant = await occupantOf(layout, baseUrl, 500);
    if (occupant.kind === "own") return daemonStatus(layout, baseUrl);
    // Someone else holds the port: our daemon cannot bind it and exits.
    if (occupant.kind !== "none" && exited !== null)
      throw foreignDaemonError(layout, baseUrl, takenBy(occupant));
    if (exited !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new DaemonUnavailableError(
    `the daemon did not start at ${baseUrl}${exited !== null ? ` (it exited with code ${exited})` : ""}; see ${layout.daemonLog}`,
  );
}

/** SIGTERM, then SIGKILL after a timeout. Returns false when this home's daemon was not running. */
export async function stopDaemon(layout: HomeLayout): Promise<boolean> {
  const state = liveState(layout);
  if (!state) return false;
  process.kill(state.pid, "SIGTERM");
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(state.pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (isAlive(state.pid)) {
    process.kill(state.pid, "SIGKILL");
    while (isAlive(state.pid)) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  rmSync(layout.daemonState, { force: true });
  rmSync(layout.daemonPid, { force: true });
  return true;
}

export interface EnsureDaemonOptions {
  /**
   * The URL came from SVC_BASE_URL: the user chose that daemon, so a loopback daemon of another
   * home is used like a remote one (its identities are claimed by link).
   */
  explicit?: boolean;
}

/**
 * Makes sure a daemon of this version answers at `baseUrl`: this home's loopback daemon is started
 * when absent and restarted when its version differs; a remote one must already be up. A loopback
 * port held by another home's daemon, or by something that is not svc, is refused, never used.
 */
export async function ensureDaemon(
  layout: HomeLayout,
  baseUrl: string,
  env: NodeJS.ProcessEnv,
  options: EnsureDaemonOptions = {},
): Promise<Health | undefined> {
  if (!isLoopbackUrl(baseUrl)) {
    const health = await probeHealth(baseUrl);
    if (health) return health;
    throw new DaemonUnavailableError(
      `the svc daemon at ${baseUrl} is not reachable; check SVC_BASE_URL and the network`,
    );
  }
  const usable = (occupant: Occupant) =>
    occupant.kind === "own" || (options.explicit === true && occupant.kind === "other_home");
  const occupant = await occupantOf(layout, baseUrl);
  // The health record it answered with is returned: commands that show it need not ask again.
  if (usable(occupant) && "health" in occupant && occupant.health.version === VERSION) return occupant.health;
  // CLI processes started together on one home start one daemon: the others wait, then find it.
  return withFileLock(
    join(layout.server, "daemon-start.lock"),
    { purpose: "starting the daemon" },
    async (): Promise<Health | undefined> => {
      const current = await occupantOf(layout, baseUrl);
      if (current.kind === "none") {
        // One home, one daemon: this home's daemon answering elsewhere is not started again here.
        const running = liveState(layout);
        if (running && running.url !== baseUrl) throw elsewhereError(layout, baseUrl, running.url, options);
        await startDetached(layout, baseUrl, env);
        return undefined;
      }
      if (!usable(current) || !("health" in current))
        throw foreignDaemonError(layout, baseUrl, takenBy(current));
      if (current.health.version === VERSION) return current.health;
      if (current.kind !== "own" || !(await stopDaemon(layout))) {
        throw new SvcError(
          "OperationNotAllowedError",
          `a daemon of version ${current.health.version} answers at ${baseUrl} but it is not this SVC_HOME's; stop it first`,
        );
      }
      await startDetached(layout, baseUrl, env);
      return undefined;
    },
  );
}
