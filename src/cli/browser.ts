import { spawn } from "node:child_process";

/** The command that opens a URL in the default browser on this platform. */
function opener(url: string): { command: string; args: string[] } {
  if (process.platform === "darwin") return { command: "open", args: [url] };
  // `start` is a cmd built-in; the empty "" is the window title it would otherwise take from the URL.
  if (process.platform === "win32") return { command: "cmd", args: ["/c", "start", "", url] };
  return { command: "xdg-open", args: [url] };
}

/**
 * Opens `url` in a browser, best effort: never throws and never waits. `SVC_NO_BROWSER=1` (CI,
 * tests, headless machines) skips it; the caller prints the URL either way. Returns whether an
 * opener was started.
 */
export function openBrowser(url: string, env: NodeJS.ProcessEnv): boolean {
  if (env.SVC_NO_BROWSER && env.SVC_NO_BROWSER !== "0") return false;
  const { command, args } = opener(url);
  try {
    const child = spawn(command, args, { detached: true, stdio: "ignore", env });
    // A missing opener fails asynchronously (ENOENT); the printed link is the fallback.
    child.on("error", () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}
