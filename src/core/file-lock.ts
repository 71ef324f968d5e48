import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type SvcError, UnexpectedError } from "./errors.ts";
import { ensurePrivateDir } from "./secure-fs.ts";

/**
 * A lock between svc processes sharing one SVC_HOME: a file created exclusively that holds its
 * owner's pid. A holder that died leaves the file behind; its pid no longer exists, so the next
 * process takes the lock over.
 */
const POLL_MS = 20;
const DEFAULT_TIMEOUT_MS = 30_000;
/** A lock file still empty after this long belongs to a process that died while creating it. */
const EMPTY_LOCK_GRACE_MS = 2_000;

export interface FileLockOptions {
  /** What the lock protects, for the timeout message ("creating the local identity"). */
  purpose: string;
  timeoutMs?: number;
}

/** Runs `task` holding the lock at `path`, waiting (asynchronously) for another holder to finish. */
export async function withFileLock<T>(
  path: string,
  options: FileLockOptions,
  task: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  while (!tryFileLock(path)) {
    if (Date.now() > deadline) throw timedOut(path, options);
    await sleep(POLL_MS);
  }
  try {
    return await task();
  } finally {
    rmSync(path, { force: true });
  }
}

/** The same, for short synchronous work (the caller's thread sleeps while it waits). */
export function withFileLockSync<T>(path: string, options: FileLockOptions, task: () => T): T {
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (!tryFileLock(path)) {
    if (Date.now() > deadline) throw timedOut(path, options);
    Atomics.wait(pause, 0, 0, POLL_MS);
  }
  try {
    return task();
  } finally {
    rmSync(path, { force: true });
  }
}

/** Whether the process with this pid still holds what it locked: by default, whether it still exists. */
export type HolderRuns = (pid: number) => boolean;

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * One attempt at the lock at `path`: true when this process now holds it. A lock whose holder no
 * longer runs is removed (so the next attempt can take it) and this one reports false.
 */
export function tryFileLock(path: string, holderRuns: HolderRuns = pidExists): boolean {
  ensurePrivateDir(dirname(path));
  try {
    writeFileSync(path, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  if (holderIsGone(path, holderRuns)) rmSync(path, { force: true });
  return false;
}

/** The pid a lock file names, if it names one. */
export function lockHolder(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function holderIsGone(path: string, holderRuns: HolderRuns): boolean {
  const pid = lockHolder(path);
  if (pid !== undefined) return !holderRuns(pid);
  // Empty (or unreadable: released meanwhile, and the next attempt takes it).
  try {
    return Date.now() - statSync(path).mtimeMs > EMPTY_LOCK_GRACE_MS;
  } catch {
    return false;
  }
}

function timedOut(path: string, options: FileLockOptions): SvcError {
  return new UnexpectedError(
    `timed out waiting for another svc process ${options.purpose} (lock ${path}); if no svc process is running, delete that file`,
  );
}
