import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OnboardReport } from "../../src/cli/commands/onboard.ts";
import { type CliResult, SVC_BIN, SvcSandbox } from "../support/cli.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { WebSession } from "../support/web-session.ts";

const CLAIM_LINK = /^ {2}(http:\/\/127\.0\.0\.1:\d+\/api\/claim\/[A-Za-z0-9_-]+)$/m;

/** A CLI process started in `cwd`, with what it printed so far. */
function startIn(sandbox: SvcSandbox, cwd: string, args: string[]) {
  const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd, env: sandbox.env, stdio: "pipe" });
  child.stdin.end();
  const output = { stdout: "", stderr: "" };
  child.stdout.on("data", (chunk: Buffer) => {
    output.stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output.stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 25_000);
  const result = new Promise<CliResult>((resolve) => {
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, ...output });
    });
  });
  /** The claim link, once the CLI has printed it on stderr. */
  const claimLink = async (): Promise<string> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const match = CLAIM_LINK.exec(output.stderr);
      if (match) return match[1]!;
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`no claim link: ${output.stderr}${output.stdout}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return { output, result, claimLink, kill: (signal: NodeJS.Signals) => child.kill(signal) };
}

/** What a person does in the browser: opens the claim page (signed in), and confirms. */
async function confirmInBrowser(browser: WebSession, link: string): Promise<Response> {
  const path = new URL(link).pathname;
  const page = await browser.request("GET", path);
  const html = await page.text();
  expect(page.status).toBe(200);
  expect(html).toContain("Attach to my account");
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  expect(csrf).toBeDefined();
  return browser.request("POST", `${path}/confirm`, { form: { csrf_token: csrf! } });
}

describe("claiming an identity on a daemon with another SVC_HOME", () => {
  let daemon: TestDaemon;
  let browser: WebSession;
  let principalId: string;
  let cwd: string;

  beforeAll(async () => {
    daemon = await startTestDaemon();
    browser = new WebSession(daemon.daemon.url);
    const signedIn = await browser.signIn(`claim-${Date.now()}@example.com`, "correct horse battery", true);
    expect(signedIn.status).toBe(200);
    principalId = ((await signedIn.json()) as { principal_id: string }).principal_id;
    cwd = mkdtempSync(join(tmpdir(), "svc-claim-cwd-"));
  });
  afterAll(async () => {
    await daemon.stop();
    rmSync(cwd, { recursive: true, force: true });
  });

  const cliFor = () => SvcSandbox.create({ SVC_BASE_URL: daemon.daemon.url });

  it("svc onboard shows the claim link, waits, and finishes once it is confirmed in the browser", async () => {
    const sandbox = await cliFor();
    try {
      const cli = startIn(sandbox, cwd, ["onboard", "--json"]);
      const link = await cli.claimLink();
      expect(cli.output.stderr).toContain(
        "Open this link in a browser, sign in (or create an account) and confirm:",
      );
      // NDJSON: the wait is announced on stdout before the report.
      const announced = JSON.parse(cli.output.stdout.split("\n")[0]!);
      expect(announced).toMatchObject({ type: "claim", status: "waiting_for_claim", claim_url: link });

      const confirmed = await confirmInBrowser(browser, link);
      expect(confirmed.status).toBe(200);
      expect(await confirmed.text()).toContain("Identity claimed");

      const result = await cli.result;
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stdout.trim().split("\n");
      expect(JSON.parse(lines[1]!)).toMatchObject({
        type: "claim",
        status: "claimed",
        principal_id: principalId,
      });
      const report = JSON.parse(lines.at(-1)!) as OnboardReport;
      expect(report.claim).toMatchObject({
        claimed: "link",
        principal_id: principalId,
        principal_role: "user",
      });

      const whoami = await sandbox.json<{ principal_id?: string }>(["whoami"]);
      expect(whoami.principal_id).toBe(principalId);

      // Claimed now: a second run asks nothing.
      const again = await sandbox.run(["connections"]);
      expect(again.code).toBe(0);
      expect(again.stderr).not.toContain("/api/claim/");
    } finally {
      rmSync(join(sandbox.home, ".."), { recursive: true, force: true });
    }
  });

  it("any command refused for want of a claim waits for it; Ctrl-C cancels with exit 2", async () => {
    const sandbox = await cliFor();
    try {
      const cancelled = startIn(sandbox, cwd, ["connections", "--json"]);
      await cancelled.claimLink();
      cancelled.kill("SIGINT");
      const stopped = await cancelled.result;
      expect(stopped.code).toBe(2);
      expect(JSON.parse(stopped.stdout)).toMatchObject({ error: "InputCancelledError" });

      const cli = startIn(sandbox, cwd, ["connections", "--json"]);
      const link = await cli.claimLink();
      expect((await confirmInBrowser(browser, link)).status).toBe(200);
      const result = await cli.result;
      expect(result.code, result.stderr).toBe(0);
      // stdout stays the command's own JSON document.
      expect(JSON.parse(result.stdout)).toEqual([]);
      expect((await sandbox.json<{ principal_id?: string }>(["whoami"])).principal_id).toBe(principalId);
    } finally {
      rmSync(join(sandbox.home, ".."), { recursive: true, force: true });
    }
  });
});
