/**
 * One home, one daemon. Two daemons on one SVC_HOME would share its store and files while each
 * keeps its own caches, replay cache and refresh locks in memory: a PoP token replayed at the other
 * one, or a refresh token rotated by both at once, would get through. The daemon holds
 * `server/daemon.lock` (its pid, created exclusively) from before it opens the store until it has
 * closed it. A lock left by a daemon that died is taken over: its pid no longer runs `svc daemon
 * serve`.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { isDaemonProcess, readDaemonState } from "../core/daemon-state.ts";
import { OperationNotAllowedError } from "../core/errors.ts";
import type { HomeLayout } from "../core/paths.ts";
import { ensurePrivateDir } from "../core/secure-fs.ts";

/** A racing starter may take over the same stale lock: a few rounds settle who holds it. */
const ATTEMPTS = 3;

function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Takes the home's daemon lock, or refuses (exit 4) while another daemon of the home runs. Returns its release. */
export function lockHome(layout: HomeLayout): () => void {
  ensurePrivateDir(layout.server);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      writeFileSync(layout.daemonLock, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
      return () => {
        if (holderOf(layout.daemonLock) === process.pid) rmSync(layout.daemonLock, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = holderOf(layout.daemonLock);
    if (holder !== undefined && holder !== process.pid && isDaemonProcess(holder)) {
      const state = readDaemonState(layout.daemonState);
      const where = state?.pid === holder ? ` at ${state.url}` : "";
      throw new OperationNotAllowedError(
        `the daemon of ${layout.home} is already running${where} (pid ${holder}); a home has one daemon. Use it (commands find it by themselves), or stop it first with \`svc daemon stop\``,
      );
    }
    rmSync(layout.daemonLock, { force: true });
  }
  throw new OperationNotAllowedError(
    `could not take ${layout.daemonLock}: another daemon of this home is starting at the same time`,
  );
}
