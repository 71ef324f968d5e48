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
