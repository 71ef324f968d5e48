import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEventRecord } from "../../src/api/audit.ts";
import { main } from "../../src/cli/main.ts";
import { homeLayout } from "../../src/core/paths.ts";
import { IdentityFiles } from "../../src/identity/identity-files.ts";
import { SvcSandbox } from "../support/cli.ts";
import { signedFetch } from "../support/daemon.ts";

const HEADER = /^TIMESTAMP\s+EVENT\s+PROVIDER\s+CONNECTION\s+IDENTITY\s+STATUS$/;
const FIELDS = ["timestamp", "event", "provider", "connection", "identity", "status"];

describe("svc log", () => {
  let sandbox: SvcSandbox;
  let handle: string;

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    const whoami = await sandbox.json<{ identity: string }>(["whoami"]);
    handle = whoami.identity;
    const key = `sk-test-${randomBytes(12).toString("hex")}`;
    expect((await sandbox.run(["login", "openai"], { input: `${key}\n` })).code).toBe(0);
    expect((await sandbox.run(["logout", "openai"])).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("shows the latest entries newest first, with the six fields", async () => {
    const result = await sandbox.run(["log"]);
    expect(result.code).toBe(0);
    const [header, ...rows] = result.stdout.trimEnd().split("\n");
    expect(header).toMatch(HEADER);
    expect(rows[0]).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT\\S+Z\\s+provider\\.logout\\s+openai\\s+default\\s+${handle}\\s+success$`,
      ),
    );
    expect(rows[1]).toMatch(
      new RegExp(`^\\S+Z\\s+provider\\.login\\s+openai\\s+default\\s+${handle}\\s+success$`),
    );
    expect(rows.some((row) => /identity\.claimed\s+-\s+-\s+/.test(row))).toBe(true);
  });

  it("-n sets how many, --json prints an array of entries", async () => {
    const three = await sandbox.run(["log", "-n", "3"]);
    expect(three.code).toBe(0);
    expect(three.stdout.trimEnd().split("\n")).toHaveLength(4);

    const events = await sandbox.json<AuditEventRecord[]>(["log", "-n", "2"]);
    expect(events).toHaveLength(2);
    for (const event of events) for (const field of FIELDS) expect(event).toHaveProperty(field);
    expect(events.map((event) => event.event)).toEqual(["provider.logout", "provider.login"]);

    expect((await sandbox.run(["log", "-n", "0"])).code).toBe(2);
  });

  it("pages through more entries than the daemon gives at once", async () => {
    const identity = new IdentityFiles(homeLayout(sandbox.home).identities).load(handle);
    // The daemon takes proxy events of the last 10 minutes only: 800 events, half a second apart.
    const base = Date.now() - 7 * 60_000;
    for (let batch = 0; batch < 2; batch++) {
      const events = Array.from({ length: 400 }, (_, index) => ({
        timestamp: new Date(base + (batch * 400 + index) * 500).toISOString(),
        event: "proxy.request",
        status: index === 399 && batch === 1 ? "failure" : "success",
        provider: "openai",
        connection: "default",
      }));
      const answer = await signedFetch(sandbox.baseUrl, identity, "POST", "/audit/events", { events });
      expect(answer.status).toBe(200);
    }
    const events = await sandbox.json<AuditEventRecord[]>(["log", "-n", "700"]);
    expect(events).toHaveLength(700);
    expect(new Set(events.map((event) => event.id)).size).toBe(700);
    const times = events.map((event) => event.timestamp);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it("colours failures when colour is on", async () => {
    let stdout = "";
    const code = await main(["log", "-n", "800"], {
      stdout: (text) => {
        stdout += text;
      },
      stderr: () => {},
      env: { ...sandbox.env, NO_COLOR: undefined },
      stdinIsTty: false,
      stdoutIsTty: true,
    });
    expect(code).toBe(0);
    const failure = stdout.split("\n").find((line) => line.includes("failure"));
    expect(failure).toContain("\x1b[31mfailure");
  });

  it("--raw -n 5 prints the end of the client debug log", async () => {
    const result = await sandbox.run(["log", "--raw", "-n", "5"]);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(5);
    const file = readFileSync(join(sandbox.home, "client", "logs", "svc.log"), "utf8")
      .trimEnd()
      .split("\n");
    expect(lines).toEqual(file.slice(-5));
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty("msg");
  });

  it("reads the daemon's audit file when the daemon is stopped, and says so", async () => {
    expect((await sandbox.run(["daemon", "stop"])).code).toBe(0);
    const result = await sandbox.run(["log", "-n", "3"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`no svc daemon answers at ${sandbox.baseUrl}`);
    expect(result.stderr).toContain(join(sandbox.home, "server", "logs", "svc.log"));
    const [header, ...rows] = result.stdout.trimEnd().split("\n");
    expect(header).toMatch(HEADER);
    expect(rows).toHaveLength(3);
    // The file holds lifecycle events; the proxy's traffic has a file of its own (proxy.log).
    expect(rows[0]).toMatch(/provider\.logout\s+openai/);

    const json = await sandbox.run(["log", "-n", "900", "--json"]);
    const events = JSON.parse(json.stdout) as AuditEventRecord[];
    expect(events.at(-1)?.event).toBe("identity.claimed");
    expect(events.map((event) => event.event)).toContain("provider.logout");
    expect(events.map((event) => event.event)).not.toContain("proxy.request");

    // It did not start the daemon to read its log.
    const status = await sandbox.json<{ running: boolean }>(["daemon", "status"]);
    expect(status.running).toBe(false);
  });
});
