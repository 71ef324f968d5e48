/**
 * `svc run` end to end, the process side: exit statuses pass through as a shell reports them,
 * stop signals sent to svc reach the child, and a daemon that goes away mid-run gives the child a
 * clear 502 rather than a hang.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SvcSandbox } from "../support/cli.ts";
import { startProxiedSandbox, type Upstream } from "../support/upstream.ts";

const NODE = process.execPath;
const KEY = `sk-canary-${randomBytes(16).toString("hex")}`;

/** A child that says "ready", then exits 7 on SIGINT; other signals keep their default action. */
const TRAPS_SIGINT = `
process.on("SIGINT", () => { console.log("child got SIGINT"); process.exit(7); });
console.log("ready");
setTimeout(() => process.exit(99), 20_000);
`;

describe("svc run: exit statuses, signals, a dead daemon", () => {
  let upstream: Upstream;
  let sandbox: SvcSandbox;
  let proxied: Awaited<ReturnType<typeof startProxiedSandbox>>;
  let scratch: string;

  beforeAll(async () => {
    proxied = await startProxiedSandbox(["api.openai.com"]);
    ({ upstream, sandbox } = proxied);
    scratch = mkdtempSync(join(tmpdir(), "svc-run-process-"));
    const login = await sandbox.run(["login", "openai"], { input: `${KEY}\n` });
    expect(login.code, login.stderr).toBe(0);
  });
  afterAll(async () => {
    await proxied?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("passes the child's exit status through: 0, 3, 42; 128+9 for SIGKILL; 127 for a missing command", async () => {
    const cases: Array<[string[], number]> = [
      [["sh", "-c", "exit 0"], 0],
      [["sh", "-c", "exit 3"], 3],
      [["sh", "-c", "exit 42"], 42],
      [["sh", "-c", "kill -9 $$"], 137],
      [["svc-e2e-no-such-command"], 127],
    ];
    const results = await Promise.all(cases.map(([command]) => sandbox.run(["run", "--", ...command])));
    expect(results.map((result) => result.code)).toEqual(cases.map(([, code]) => code));
    expect(results.at(-1)!.stderr).toContain("svc-e2e-no-such-command: command not found");
  });

  it("SIGINT sent to svc reaches the child, and the child's exit status is svc's", async () => {
    const running = sandbox.start(["run", "--", NODE, "-e", TRAPS_SIGINT]);
    await running.waitFor("stdout", /ready/);
    running.kill("SIGINT");
    const result = await running.result;
    expect(result.stdout).toContain("child got SIGINT");
    expect(result.code).toBe(7);
  });

  it("SIGTERM sent to svc reaches the child; a child killed by it gives 128+15", async () => {
    const running = sandbox.start(["run", "--", NODE, "-e", TRAPS_SIGINT]);
    await running.waitFor("stdout", /ready/);
    running.kill("SIGTERM");
    const result = await running.result;
    expect(result.code).toBe(143);
  });

  // Last: it stops the daemon (later commands would start it again).
  it("a daemon stopped mid-run gives the child a 502 with a JSON body, not a hang", async () => {
    const go = join(scratch, "go");
    const child = `
const fs = require("node:fs");
console.log("ready");
const deadline = Date.now() + 15_000;
const wait = () => {
  if (Date.now() > deadline) process.exit(98);
  if (!fs.existsSync(process.argv[1])) return void setTimeout(wait, 25);
  const started = Date.now();
  fetch("https://api.openai.com/echo").then(async (r) => {
    console.log(JSON.stringify({ status: r.status, type: r.headers.get("content-type"), body: await r.text(), ms: Date.now() - started }));
  }, (e) => { console.log("fetch failed", e.cause?.message ?? e.message); process.exit(97); });
};
wait();
`;
    const running = sandbox.start(["run", "--", NODE, "-e", child, go]);
    await running.waitFor("stdout", /ready/);
    const stopped = await sandbox.run(["daemon", "stop"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    writeFileSync(go, "");
    const result = await running.result;
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as {
      status: number;
      type: string;
      body: string;
      ms: number;
    };
    expect(answer).toMatchObject({ status: 502, type: "application/json" });
    expect(answer.ms).toBeLessThan(5_000);
    const message = expect.stringMatching(/^svc: the credential for openai could not be fetched: .+/);
    expect(JSON.parse(answer.body)).toEqual({
      error: { type: "svc_proxy", code: "DaemonUnavailableError", message },
      message,
    });
    // Its audit event had nowhere to go, and svc says so.
    expect(result.stderr).toMatch(/\d+ audit events of this run could not be delivered to the daemon/);
    expect(result.stdout + result.stderr).not.toContain(KEY);
    expect(upstream.seen).toEqual([]);
  });
});
