import { readFileSync } from "node:fs";

/** `server/daemon.json`: what a running daemon records about itself for `svc daemon status|stop`. */
export interface DaemonState {
  pid: number;
  url: string;
  version: string;
  started_at: string;
  home: string;
}

export function readDaemonState(path: string): DaemonState | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as DaemonState;
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
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

/** A pid file outlives a crash, and the pid may be reused: the process must still be `svc daemon serve`. */
export function isDaemonProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("daemon\0serve");
  } catch {
    return true; // no /proc (macOS): a live pid is the best we know
  }
}
