import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SvcSandbox } from "../support/cli.ts";

const VERSION = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
  .version as string;
const CANARY_MASTER_KEY = `canary-master-key-${"c".repeat(40)}`;

describe("svc without a daemon", () => {
  let sandbox: SvcSandbox;
  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("prints the package version with -v and --version", async () => {
    for (const flag of ["-v", "--version"]) {
      const result = await sandbox.run([flag]);
      expect(result).toMatchObject({ code: 0, stdout: `${VERSION}\n` });
    }
  });

  it("exits 2 on an unknown option, with {error, message} under --json", async () => {
    const plain = await sandbox.run(["whoami", "--bogus"]);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/unknown option/);
    const json = await sandbox.run(["--json", "agent", "use"]);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: "InvalidInputError",
      message: expect.stringMatching(/argument/),
    });
  });

  it("exits 9 with DaemonUnavailableError when a remote daemon is unreachable", async () => {
    const result = await sandbox.run(["whoami", "--json"], {
      env: { SVC_BASE_URL: "http://svc-daemon.invalid:7998" },
    });
    expect(result.code).toBe(9);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: "DaemonUnavailableError" });
  });

  it("prints completion scripts for bash, zsh and fish", async () => {
    for (const shell of ["bash", "zsh", "fish"]) {
      const result = await sandbox.run(["completion", shell]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("svc");
      expect(result.stdout).toContain("doctor");
    }
    expect((await sandbox.run(["completion", "powershell"])).code).toBe(2);
  });
});

describe("svc with a local daemon", () => {
  let sandbox: SvcSandbox;
  beforeAll(async () => {
    sandbox = await SvcSandbox.create({ SVC_MASTER_KEY: CANARY_MASTER_KEY });
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("starts the daemon on first use, claims a local identity as admin, and reports whoami", async () => {
    const whoami = await sandbox.json<Record<string, string>>(["whoami"]);
    expect(whoami).toMatchObject({
      home: sandbox.home,
      principal_role: "admin",
      effective_encryption_source: "env",
      daemon_url: sandbox.baseUrl,
    });
    expect(whoami.identity).toMatch(/^[a-z]+-[a-z]+-\d{4}$/);
    expect(whoami.did).toMatch(/^did:key:z6Mk/);
    expect(whoami.principal_id).toBeTruthy();
    expect(whoami.vault_id).toBeTruthy();
  });

  it("reports status with pid, URL, version and uptime", async () => {
    const status = await sandbox.json<Record<string, unknown>>(["daemon", "status"]);
    expect(status).toMatchObject({ running: true, url: sandbox.baseUrl, version: VERSION });
    expect(status.pid).toEqual(expect.any(Number));
    expect(status.uptime_seconds).toEqual(expect.any(Number));
  });

  it("passes all six doctor checks", async () => {
    const result = await sandbox.run(["doctor", "--json"]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.ok).toBe(true);
    expect(Object.keys(report.checks)).toEqual([
      "spec_version",
      "identity",
      "providers",
      "connections",
      "vault",
      "integrity",
    ]);
    for (const check of Object.values(report.checks)) expect(check).toEqual({ status: "ok", ok: true });
  });

  it("creates a second agent, switches to it, and both share the owner's vault", async () => {
    const first = await sandbox.json<Record<string, string>>(["whoami"]);
    const created = await sandbox.json<Record<string, string>>([
      "agent",
      "create",
      "--handle",
      "build-bot-42",
    ]);
    expect(created).toMatchObject({
      handle: "build-bot-42",
      principal_id: first.principal_id,
      active: false,
    });
    expect((await sandbox.run(["agent", "use", "build-bot-42"])).code).toBe(0);
    const now = await sandbox.json<Record<string, string>>(["whoami"]);
    expect(now).toMatchObject({ identity: "build-bot-42", vault_id: first.vault_id });
    expect((await sandbox.run(["agent", "use", "no-such-agent"])).code).toBe(2);
    expect((await sandbox.run(["agent", "use", first.identity!])).code).toBe(0);
  });

  it("keeps state files private: 0700 directories, 0600 keys", async () => {
    expect(statSync(sandbox.home).mode & 0o777).toBe(0o700);
    expect(statSync(join(sandbox.home, "server")).mode & 0o777).toBe(0o700);
    expect(statSync(join(sandbox.home, "client", "identities")).mode & 0o777).toBe(0o700);
    for (const file of sandbox.files()) {
      if (/\.(key|secret)$/.test(file.path) || file.path.endsWith("svc.db"))
        expect(file.mode, file.path).toBe(0o600);
    }
  });

  it("shows the daemon log", async () => {
    const result = await sandbox.run(["daemon", "logs", "-n", "5"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("svc daemon listening");
  });

  it("never writes the master key or an identity key into any other file", async () => {
    const files = sandbox.files();
    const keyBodies = files
      .filter((file) => file.path.endsWith(".key") && file.path.includes("identities"))
      .map((file) => file.content.toString().split("\n")[1]!);
    expect(keyBodies.length).toBeGreaterThan(0);
    for (const file of files) {
      const text = file.content.toString("latin1");
      expect(text.includes(CANARY_MASTER_KEY), `${file.path} holds the master key`).toBe(false);
      if (file.path.endsWith(".key")) continue;
      for (const body of keyBodies)
        expect(text.includes(body), `${file.path} holds an identity key`).toBe(false);
    }
  });

  it("stops gracefully on `daemon stop`: the store is closed cleanly and the pid file removed", async () => {
    const result = await sandbox.run(["daemon", "stop"]);
    expect(result.code).toBe(0);
    expect(existsSync(join(sandbox.home, "server", "daemon.pid"))).toBe(false);
    // A clean SQLite close checkpoints the write-ahead log and removes it.
    expect(existsSync(join(sandbox.home, "server", "svc.db-wal"))).toBe(false);
    const status = await sandbox.json<{ running: boolean }>(["daemon", "status"]);
    expect(status.running).toBe(false);
  });
});

describe("a wrong master key", () => {
  it("starts the daemon but reports vault and integrity failed, and overwrites nothing", async () => {
    const sandbox = await SvcSandbox.create({ SVC_MASTER_KEY: CANARY_MASTER_KEY });
    try {
      expect((await sandbox.run(["doctor"])).code).toBe(0);
      await sandbox.run(["daemon", "stop"]);
      const database = join(sandbox.home, "server", "svc.db");
      const before = readFileSync(database);

      const wrong = { SVC_MASTER_KEY: `another-master-key-${"x".repeat(40)}` };
      const doctor = await sandbox.run(["doctor", "--json"], { env: wrong });
      expect(doctor.code).toBe(1);
      const report = JSON.parse(doctor.stdout);
      expect(report.checks.vault.ok).toBe(false);
      expect(report.checks.integrity.ok).toBe(false);
      expect(report.issues.join("\n")).toMatch(/master key/i);
      expect(doctor.stdout).not.toContain(wrong.SVC_MASTER_KEY);
      await sandbox.run(["daemon", "stop"], { env: wrong });
      expect(readFileSync(database).equals(before)).toBe(true);

      expect((await sandbox.run(["doctor"])).code).toBe(0);
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("client debug log", () => {
  it("writes JSON lines to the default log, mirrors them on stderr with --verbose, and --log-file '' disables it", async () => {
    const sandbox = await SvcSandbox.create();
    try {
      const verbose = await sandbox.run(["whoami", "--verbose"]);
      expect(verbose.code).toBe(0);
      expect(verbose.stderr).toMatch(/\[debug\] daemon request .*path=\/api\/whoami.*status=200/);
      const log = join(sandbox.home, "client", "logs", "svc.log");
      const lines = readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(lines.some((line) => line.msg === "daemon request" && line.path === "/api/whoami")).toBe(true);
      expect(statSync(log).mode & 0o777).toBe(0o600);

      const before = readFileSync(log, "utf8");
      expect((await sandbox.run(["whoami", "--log-file", ""])).code).toBe(0);
      expect(readFileSync(log, "utf8")).toBe(before);

      const custom = join(sandbox.home, "custom.log");
      expect((await sandbox.run(["whoami", "--log-file", custom])).code).toBe(0);
      expect(readFileSync(custom, "utf8")).toContain("daemon request");
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("a local daemon of another version", () => {
  it("is stopped and replaced by this version's daemon on the next command", async () => {
    const sandbox = await SvcSandbox.create();
    const server = join(sandbox.home, "server");
    // A stand-in for an older daemon: answers /api/health with another version (and no instance id),
    // records its state, and runs as `... daemon serve` like a real one (svc checks the command line).
    const older = spawn(
      process.execPath,
      [
        "-e",
        `const http = require("node:http"); const fs = require("node:fs");
         fs.mkdirSync(${JSON.stringify(server)}, { recursive: true, mode: 0o700 });
         http.createServer((q, s) => { s.setHeader("content-type", "application/json"); s.end(JSON.stringify({ status: "ok", version: "0.0.1" })); })
           .listen(${sandbox.port}, "127.0.0.1", () => {
             fs.writeFileSync(${JSON.stringify(join(server, "daemon.json"))}, JSON.stringify({ pid: process.pid, url: ${JSON.stringify(sandbox.baseUrl)}, version: "0.0.1", started_at: new Date().toISOString(), home: "" }));
             fs.writeFileSync(${JSON.stringify(join(server, "daemon.pid"))}, String(process.pid));
             console.log("ready");
           });`,
        "daemon",
        "serve",
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise((resolve) => older.stdout!.once("data", resolve));
      const exited = new Promise((resolve) => older.once("exit", resolve));
      const whoami = await sandbox.json<{ identity: string }>(["whoami"]);
      expect(whoami.identity).toBeTruthy();
      await exited;
      const status = await sandbox.json<{ version: string }>(["daemon", "status"]);
      expect(status.version).toBe(VERSION);
    } finally {
      older.kill("SIGKILL");
      await sandbox.destroy();
    }
  });
});
