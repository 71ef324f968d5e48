import { spawn } from "node:child_process";

/** The command that opens a URL in the default browser on this platform. */
function opener(url: string): { command: string; args: string[] } {
  if (process.platform === "darwin") return { command: "open", args: [url] };
  // `start` is a cmd built-in; the empty "" is the window title it would otherwise take from the URL.
  if (process.platform === "win32") return { command: "cmd", args: ["/c", "start", "", url] };
  return { command: "xdg-open", args: [url] };
}

/**
 * Whether a graphical browser can be expected. Where `xdg-open` is the opener it needs an X11 or
 * Wayland display; without one (SSH, containers) it would start a text browser in our terminal.
 */
export function hasDisplay(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === "darwin" || platform === "win32") return true;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
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
