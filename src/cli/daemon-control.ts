import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Health } from "../api/health.ts";
import { isLoopbackUrl } from "../client/base-url.ts";
import { DaemonClient } from "../client/daemon-client.ts";
import { readDaemonState } from "../core/daemon-state.ts";
import { DaemonUnavailableError, SvcError } from "../core/errors.ts";
import { withFileLock } from "../core/file-lock.ts";
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
}

/** Answers `/api/health` within a short timeout, or undefined. */
export async function probeHealth(baseUrl: string, timeoutMs = 1500): Promise<Health | undefined> {
  try {
    return await new DaemonClient({ baseUrl }).get<Health>("/api/health", { auth: "none", timeoutMs });
  } catch (error) {
    if (error instanceof DaemonUnavailableError) return undefined;
    throw error;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return !isZombie(pid);
}

/** An exited daemon whose parent has not reaped it yet still answers `kill 0`; /proc tells (Linux). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

export async function daemonStatus(layout: HomeLayout, baseUrl: string): Promise<DaemonStatus> {
  const health = await probeHealth(baseUrl);
  const state = readDaemonState(layout.daemonState);
  const local = state && state.url === baseUrl && isAlive(state.pid) ? state : undefined;
  if (!health) return { running: false, url: baseUrl };
  return {
    running: true,
    url: baseUrl,
    pid: local?.pid,
    version: health.version,
    started_at: local?.started_at,
    uptime_seconds: local ? Math.round((Date.now() - Date.parse(local.started_at)) / 1000) : undefined,
  };
}

function hostAndPort(baseUrl: string): { host: string; port: string } {
  const url = new URL(baseUrl);
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: url.port || "80" };
}

/** Starts `svc daemon serve` detached, logging to server/logs/daemon.log, and waits for health. */
export async function startDetached(
  layout: HomeLayout,
  baseUrl: string,
  env: NodeJS.ProcessEnv,
): Promise<DaemonStatus> {
  const { host, port } = hostAndPort(baseUrl);
  ensurePrivateDir(layout.serverLogs);
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
    const health = await probeHealth(baseUrl, 500);
    // Another process may have won the port; any daemon answering at the URL will do.
    if (health) return daemonStatus(layout, baseUrl);
    if (exited !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new DaemonUnavailableError(
    `the daemon did not start at ${baseUrl}${exited !== null ? ` (it exited with code ${exited})` : ""}; see ${layout.daemonLog}`,
  );
}

/** SIGTERM, then SIGKILL after a timeout. Returns false when no local daemon was running. */
export async function stopDaemon(layout: HomeLayout): Promise<boolean> {
  const state = readDaemonState(layout.daemonState);
  if (!state || !isAlive(state.pid)) {
    rmSync(layout.daemonState, { force: true });
    rmSync(layout.daemonPid, { force: true });
    return false;
  }
  process.kill(state.pid, "SIGTERM");
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(state.pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (isAlive(state.pid)) {
    process.kill(state.pid, "SIGKILL");
    while (isAlive(state.pid)) await new Promise((resolve) => setTimeout(resolve, 20));
    rmSync(layout.daemonState, { force: true });
    rmSync(layout.daemonPid, { force: true });
  }
  return true;
}

/**
 * Makes sure a daemon of this version answers at `baseUrl`: a loopback daemon is started when
 * absent and restarted when its version differs; a remote one must already be up.
 */
export async function ensureDaemon(
  layout: HomeLayout,
  baseUrl: string,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const health = await probeHealth(baseUrl);
  if (health && health.version === VERSION) return;
  if (!isLoopbackUrl(baseUrl)) {
    if (health) return;
    throw new DaemonUnavailableError(
      `the svc daemon at ${baseUrl} is not reachable; check SVC_BASE_URL and the network`,
    );
  }
  // CLI processes started together on one home start one daemon: the others wait, then find it.
  await withFileLock(
    join(layout.server, "daemon-start.lock"),
    { purpose: "starting the daemon" },
    async () => {
      const current = await probeHealth(baseUrl);
      if (current?.version === VERSION) return;
      if (current && !(await stopDaemon(layout))) {
        throw new SvcError(
          "OperationNotAllowedError",
          `a daemon of version ${current.version} answers at ${baseUrl} but it is not this SVC_HOME's; stop it first`,
        );
      }
      await startDetached(layout, baseUrl, env);
    },
  );
}
