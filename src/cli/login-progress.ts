import type { AuthSession } from "../api/auth-sessions.ts";
import type { Output } from "./output.ts";
import { Spinner } from "./spinner.ts";

/**
 * What the person must do when the session asks for something new (another page, a device code),
 * as lines for stderr; undefined when nothing new is asked. Each link stands alone on its line,
 * indented by two spaces, so it can be copied, and found by scripts and tests.
 */
export function instructions(
  previous: AuthSession | undefined,
  session: AuthSession,
  name: string,
): string[] | undefined {
  const url = session.next?.url;
  if (!url || (url === previous?.next?.url && session.device?.user_code === previous.device?.user_code)) {
    return undefined;
  }
  switch (session.waiting_for ?? (session.flow === "api_key" ? "api_key" : "authorization")) {
    case "api_key":
      return ["Open this link in a browser to enter the API key:", `  ${url}`];
    case "client_credentials":
      return [
        `${name} needs the client ID and secret of an OAuth app of yours.`,
        ...(session.client_setup
          ? session.client_setup.steps.flatMap((step, index) => [
              `${index + 1}. ${step.text}`,
              ...(step.copy ? [`  ${step.copy}`] : []),
            ])
          : session.redirect_uri
            ? ["Register this callback URL in the app's settings:", `  ${session.redirect_uri}`]
            : []),
        "Open this link in a browser to enter the client ID and secret:",
        `  ${url}`,
      ];
    case "device_code":
      return [
        ...(session.device
          ? [`Enter code ${session.device.user_code} at ${session.device.verification_uri}`]
          : []),
        "The code and the link are also on this page:",
        `  ${url}`,
      ];
    case "authorization":
      return [`Open this link in a browser to sign in to ${name}:`, `  ${url}`];
  }
}

/** The state of an open session, for the spinner or a status line. */
export function statusText(session: AuthSession, name: string): string {
  if (session.status === "processing") {
    return session.flow === "api_key" ? "Checking the key…" : `Exchanging the code with ${name}…`;
  }
  switch (session.waiting_for) {
    case "api_key":
      return "Waiting for the browser…";
    case "client_credentials":
      return "Waiting for the client ID and secret…";
    case "device_code":
      return `Waiting for you to enter the code at ${name}…`;
    case "authorization":
      return `Waiting for you to sign in at ${name}…`;
    default:
      return "Starting the login…";
  }
}

/** How waiting for a login is shown on stderr. */
export interface LoginProgress {
  /** What the person must see (links, codes): printed even with --quiet or --json. */
  notice(lines: string[]): void;
  /** A one-off status line (not with --quiet or --json). */
  note(text: string): void;
  /** The current state: the spinner's text on a terminal, else a line whenever it changes. */
  status(text: string): void;
  /** Erases the spinner; safe to call more than once. */
  stop(): void;
}

/**
 * A spinner drawn with `write` when `terminal` (the real stderr) is a TTY and neither --json nor
 * --quiet is given; else plain lines through `out`.
 */
export function loginProgress(
  out: Output,
  write: (text: string) => void,
  terminal: Pick<NodeJS.WriteStream, "isTTY" | "columns"> = process.stderr,
): LoginProgress {
  if (terminal.isTTY && !out.options.json && !out.options.quiet) {
    const spinner = new Spinner(write, { width: terminal.columns });
    return {
      notice: (lines) => spinner.print(lines.join("\n")),
      note: (text) => spinner.print(text),
      status: (text) => spinner.update(text),
      stop: () => spinner.stop(),
    };
  }
  let shown: string | undefined;
  return {
    notice: (lines) => out.notice(lines.join("\n")),
    note: (text) => out.status(text),
    status: (text) => {
      if (text !== shown) out.status(text);
      shown = text;
    },
    stop: () => {},
  };
}
