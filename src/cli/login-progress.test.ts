import { describe, expect, it } from "vitest";
import type { AuthSession } from "../api/auth-sessions.ts";
import { instructions, loginProgress, statusText } from "./login-progress.ts";
import { Output } from "./output.ts";

const base: AuthSession = {
  session_id: "ses_1",
  provider: "github",
  connection: "default",
  flow: "pkce",
  status: "waiting_for_user",
  revision: 1,
  created_at: "2025-01-01T12:00:00.000Z",
  expires_at: "2025-01-01T12:10:00.000Z",
};
const session = (extra: Partial<AuthSession>): AuthSession => ({ ...base, ...extra });
const open = (url: string) => ({ next: { type: "open_url" as const, url } });

const INPUT = "http://127.0.0.1:7998/api/auth/sessions/ses_1/input?token=t";
const DEVICE_PAGE = "http://127.0.0.1:7998/api/auth/sessions/ses_1/device?token=t";
const AUTHORIZE = "https://github.com/login/oauth/authorize?client_id=c&state=s";

const credentials = session({
  status: "pending",
  waiting_for: "client_credentials",
  redirect_uri: "http://127.0.0.1:7998/auth/callback/oauth",
  ...open(INPUT),
});
const authorization = session({ revision: 2, waiting_for: "authorization", ...open(AUTHORIZE) });
const device = session({
  flow: "device_code",
  waiting_for: "device_code",
  ...open(DEVICE_PAGE),
  device: {
    user_code: "WDJB-MJHT",
    verification_uri: "https://github.com/login/device",
    expires_at: "2025-01-01T12:15:00.000Z",
    interval: 5,
  },
});

describe("instructions", () => {
  it("asks for the OAuth client on the input page, with the callback URL to register", () => {
    expect(instructions(undefined, credentials, "GitHub")).toEqual([
      "GitHub needs the client ID and secret of an OAuth app of yours.",
      "Register this callback URL in the app's settings:",
      "  http://127.0.0.1:7998/auth/callback/oauth",
      "Open this link in a browser to enter the client ID and secret:",
      `  ${INPUT}`,
    ]);
  });

  it("numbers the steps to create the OAuth app, each value to paste on a line of its own", () => {
    const guided = session({
      ...credentials,
      client_setup: {
        steps: [
          {
            text: "Open Slack's app registration page and create a Slack app:",
            copy: "https://api.slack.com/apps",
          },
          {
            text: "Set the app's callback (redirect) URL to:",
            copy: "http://127.0.0.1:7998/auth/callback/oauth",
          },
          { text: "Copy the app's client ID and client secret into the form svc opened." },
        ],
      },
    });
    expect(instructions(undefined, guided, "Slack")).toEqual([
      "Slack needs the client ID and secret of an OAuth app of yours.",
      "1. Open Slack's app registration page and create a Slack app:",
      "  https://api.slack.com/apps",
      "2. Set the app's callback (redirect) URL to:",
      "  http://127.0.0.1:7998/auth/callback/oauth",
      "3. Copy the app's client ID and client secret into the form svc opened.",
      "Open this link in a browser to enter the client ID and secret:",
      `  ${INPUT}`,
    ]);
  });

  it("names the sign-in page, again whenever the link changes, and not while it stays", () => {
    expect(instructions(credentials, authorization, "GitHub")).toEqual([
      "Open this link in a browser to sign in to GitHub:",
      `  ${AUTHORIZE}`,
    ]);
    expect(instructions(authorization, { ...authorization, revision: 3 }, "GitHub")).toBeUndefined();
    expect(instructions(authorization, session({ status: "processing" }), "GitHub")).toBeUndefined();
  });

  it("gives the device code and its verification link on one line, then the daemon's device page", () => {
    expect(instructions(credentials, device, "GitHub")).toEqual([
      "Enter code WDJB-MJHT at https://github.com/login/device",
      "The code and the link are also on this page:",
      `  ${DEVICE_PAGE}`,
    ]);
    const newCode = { ...device, device: { ...device.device!, user_code: "ABCD-EFGH" } };
    expect(instructions(device, newCode, "GitHub")?.[0]).toBe(
      "Enter code ABCD-EFGH at https://github.com/login/device",
    );
  });

  it("points an API key to the key page", () => {
    const key = session({ flow: "api_key", waiting_for: "api_key", ...open(INPUT) });
    expect(instructions(undefined, key, "OpenAI")).toEqual([
      "Open this link in a browser to enter the API key:",
      `  ${INPUT}`,
    ]);
  });
});

describe("statusText", () => {
  it("says what the login waits for", () => {
    expect(statusText(credentials, "GitHub")).toBe("Waiting for the client ID and secret…");
    expect(statusText(authorization, "GitHub")).toBe("Waiting for you to sign in at GitHub…");
    expect(statusText(device, "GitHub")).toBe("Waiting for you to enter the code at GitHub…");
    expect(statusText(session({ status: "processing" }), "GitHub")).toBe("Exchanging the code with GitHub…");
    expect(statusText(session({ flow: "api_key", waiting_for: "api_key" }), "OpenAI")).toBe(
      "Waiting for the browser…",
    );
    expect(statusText(session({ status: "pending" }), "GitHub")).toBe("Starting the login…");
  });
});

describe("loginProgress", () => {
  const capture = (options: { json?: boolean; quiet?: boolean }, terminal: boolean) => {
    const streams = { stdout: "", stderr: "" };
    const out = new Output(
      { json: Boolean(options.json), quiet: Boolean(options.quiet), color: false },
      (text) => {
        streams.stdout += text;
      },
      (text) => {
        streams.stderr += text;
      },
    );
    const progress = loginProgress(
      out,
      (text) => {
        streams.stderr += text;
      },
      { isTTY: terminal, columns: 80 },
    );
    return { streams, progress };
  };

  it("prints a status line per change when stderr is not a terminal", () => {
    const { streams, progress } = capture({}, false);
    progress.notice(["Open this link:", "  https://example.com"]);
    progress.status("Waiting…");
    progress.status("Waiting…");
    progress.note("Opening your browser…");
    progress.status("Exchanging…");
    progress.stop();
    expect(streams).toEqual({
      stdout: "",
      stderr: "Open this link:\n  https://example.com\nWaiting…\nOpening your browser…\nExchanging…\n",
    });
  });

  it("keeps only what the person must see with --quiet or --json, even on a terminal", () => {
    for (const options of [{ quiet: true }, { json: true }]) {
      const { streams, progress } = capture(options, true);
      progress.notice(["Enter code WDJB-MJHT at https://example.com/device"]);
      progress.note("Opening your browser…");
      progress.status("Waiting…");
      progress.stop();
      expect(streams).toEqual({ stdout: "", stderr: "Enter code WDJB-MJHT at https://example.com/device\n" });
    }
  });

  it("spins on a terminal and leaves no spinner line behind", () => {
    const { streams, progress } = capture({}, true);
    progress.status("Waiting…");
    progress.notice(["Enter code WDJB-MJHT at https://example.com/device"]);
    progress.stop();
    expect(streams.stdout).toBe("");
    expect(streams.stderr).toContain("Enter code WDJB-MJHT at https://example.com/device\n");
    expect(streams.stderr.endsWith("\r\x1b[2K")).toBe(true);
  });
});
