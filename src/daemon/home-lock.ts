/**
 * One home, one daemon. Two daemons on one SVC_HOME would share its store and files while each
 * keeps its own caches, replay cache and refresh locks in memory: a PoP token replayed at the other
 * one, or a refresh token rotated by both at once, would get through. The daemon holds
 * `server/daemon.lock` (its pid, created exclusively) from before it opens the store until it has
 * closed it. A lock left by a daemon that died is taken over: its pid no longer runs `svc daemon
 * serve`.
 */
import { rmSync } from "node:fs";
import { isDaemonProcess, readDaemonState } from "../core/daemon-state.ts";
import { OperationNotAllowedError } from "../core/errors.ts";
import { lockHolder, tryFileLock } from "../core/file-lock.ts";
import type { HomeLayout } from "../core/paths.ts";

/** A stale lock is removed by one attempt and taken by the next; a racing starter may need a third. */
const ATTEMPTS = 3;

/** Takes the home's daemon lock, or refuses (exit 4) while another daemon of the home runs. Returns its release. */
export function lockHome(layout: HomeLayout): () => void {
  const path = layout.daemonLock;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    // The pid may have been reused since a crash: the holder must still be `svc daemon serve`, and
    // not this process.
    if (tryFileLock(path, (pid) => pid !== process.pid && isDaemonProcess(pid))) {
      return () => {
        if (lockHolder(path) === process.pid) rmSync(path, { force: true });
      };
    }
  }
  const holder = lockHolder(path);
  const state = readDaemonState(layout.daemonState);
  const where = holder !== undefined && state?.pid === holder ? ` at ${state.url}` : "";
  throw new OperationNotAllowedError(
    `the daemon of ${layout.home} is already running${where}${holder !== undefined ? ` (pid ${holder})` : ""}; a home has one daemon. Use it (commands find it by themselves), or stop it first with \`svc daemon stop\``,
  );
}
