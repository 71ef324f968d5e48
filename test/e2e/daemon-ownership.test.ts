/**
 * One home, one daemon: `svc daemon start --port` is remembered by its home, a home never uses
 * (or registers with) another home's daemon, and `daemon status | stop | start | restart` agree,
 * whatever holds the port: nothing, a stale pid file, another home's daemon, or something not svc.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, SvcSandbox } from "../support/cli.ts";

/** Later commands in these homes find their daemon only through client/config.json. */
const NO_URL = { env: { SVC_BASE_URL: "" } };

interface Status {
  running: boolean;
  url: string;
  pid?: number;
  port_taken_by?: string;
}

let a: SvcSandbox;
let b: SvcSandbox;
let portA: number;

beforeAll(async () => {
  [a, b] = await Promise.all([
    SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" }),
    SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" }),
  ]);
  portA = await freePort();
  const started = await a.run(["daemon", "start", "--port", String(portA)], NO_URL);
  expect(started.code, started.stderr).toBe(0);
});
afterAll(async () => {
  await Promise.all([a?.destroy(), b?.destroy()]);
});

async function status(sandbox: SvcSandbox): Promise<Status> {
  const result = await sandbox.run(["daemon", "status", "--json"], NO_URL);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Status;
}

describe("svc daemon start --port", () => {
  it("saves the address, and later commands of the home follow it; /api/health names the home", async () => {
    const url = `http://127.0.0.1:${portA}`;
    const config = JSON.parse(readFileSync(join(a.home, "client", "config.json"), "utf8"));
    expect(config.daemon_base_url).toBe(url);
    const whoami = await a.run(["whoami", "--json"], NO_URL);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout).daemon_url).toBe(url);
    const health = (await (await fetch(`${url}/api/health`)).json()) as { instance_id: string };
    expect(health.instance_id).toBe(readFileSync(join(a.home, "server", "instance.id"), "utf8").trim());
    expect(await status(a)).toMatchObject({ running: true, url });
  });
});

describe("a home whose port is held by another home's daemon", () => {
  beforeAll(() => {
    // As when both homes use the default port: B's commands go where A's daemon listens.
    mkdirSync(join(b.home, "client"), { recursive: true });
    writeFileSync(
      join(b.home, "client", "config.json"),
      JSON.stringify({ daemon_base_url: `http://127.0.0.1:${portA}` }),
    );
  });

  it("stops a command with what to do instead of registering there", async () => {
    const result = await b.run(["provider", "list", "--json"], NO_URL);
    expect(result.code).toBe(9);
    const message = JSON.parse(result.stdout).message as string;
    expect(message).toContain("another SVC_HOME");
    expect(message).toContain("svc daemon start --port");
    expect(message).toContain("SVC_BASE_URL");
    const handles = readdirSync(join(b.home, "client", "identities")).map((file) => file.split(".")[0]);
    const database = new Database(join(a.home, "server", "svc.db"), { readonly: true });
    try {
      const registered = database.prepare("select handle from identities").all() as Array<{ handle: string }>;
      expect(registered.length).toBeGreaterThan(0);
      for (const { handle } of registered) expect(handles).not.toContain(handle);
    } finally {
      database.close();
    }
  });

  it("status, stop and start agree that B's daemon is not running and leave A's alone", async () => {
    expect(await status(b)).toMatchObject({ running: false, port_taken_by: "another_svc_home" });
    const stop = await b.run(["daemon", "stop", "--json"], NO_URL);
    expect(JSON.parse(stop.stdout)).toEqual({ stopped: false, port_taken_by: "another_svc_home" });
    const start = await b.run(["daemon", "start"], NO_URL);
    expect(start.code).toBe(9);
    expect(start.stderr).toContain("another SVC_HOME");
    expect(await status(a)).toMatchObject({ running: true });
  });

  it("`daemon start --port` gives B its own daemon, which later commands use", async () => {
    const portB = await freePort();
    const start = await b.run(["daemon", "start", "--port", String(portB)], NO_URL);
    expect(start.code, start.stderr).toBe(0);
    const whoami = await b.run(["whoami", "--json"], NO_URL);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout).daemon_url).toBe(`http://127.0.0.1:${portB}`);
    expect(await status(b)).toMatchObject({ running: true, url: `http://127.0.0.1:${portB}` });
    // Asked for yet another port, start points at the running one; restart moves it, and it is saved.
    const portC = await freePort();
    const again = await b.run(["daemon", "start", "--port", String(portC)], NO_URL);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(`already running at http://127.0.0.1:${portB}`);
    const restart = await b.run(["daemon", "restart", "--port", String(portC), "--json"], NO_URL);
    expect(restart.code, restart.stderr).toBe(0);
    expect(JSON.parse(restart.stdout)).toMatchObject({ running: true, url: `http://127.0.0.1:${portC}` });
    const moved = await b.run(["whoami", "--json"], NO_URL);
    expect(JSON.parse(moved.stdout).daemon_url).toBe(`http://127.0.0.1:${portC}`);
    const stop = await b.run(["daemon", "stop", "--json"], NO_URL);
    expect(JSON.parse(stop.stdout)).toEqual({ stopped: true });
    expect(await status(b)).toMatchObject({ running: false });
    expect(await status(a)).toMatchObject({ running: true });
  });
});

describe("a stale pid file", () => {
  it("is not a running daemon: status, stop and start agree", async () => {
    const sandbox = await SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" });
    try {
      const started = await sandbox.run(["daemon", "start"]);
      expect(started.code, started.stderr).toBe(0);
      const state = JSON.parse(readFileSync(join(sandbox.home, "server", "daemon.json"), "utf8"));
      expect((await sandbox.run(["daemon", "stop"])).code).toBe(0);
      // The daemon died without cleaning up, and its pid now belongs to a process that is not svc.
      const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
      const self = process.pid;
      for (const pid of [dead, self]) {
        writeFileSync(join(sandbox.home, "server", "daemon.json"), JSON.stringify({ ...state, pid }));
        writeFileSync(join(sandbox.home, "server", "daemon.pid"), `${pid}\n`);
        const before = await sandbox.run(["daemon", "status", "--json"]);
        expect(JSON.parse(before.stdout)).toMatchObject({ running: false });
        const stop = await sandbox.run(["daemon", "stop", "--json"]);
        expect(JSON.parse(stop.stdout)).toEqual({ stopped: false });
      }
      const start = await sandbox.run(["daemon", "start", "--json"]);
      expect(start.code, start.stderr).toBe(0);
      expect(JSON.parse(start.stdout)).toMatchObject({ running: true });
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("a port taken by something that is not svc", () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((_request, response) => response.writeHead(404).end("not here"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("is named by status, left alone by stop, and refused by start and other commands", async () => {
    const sandbox = await SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" });
    try {
      const env = { SVC_BASE_URL: "" };
      const start = await sandbox.run(["daemon", "start", "--port", String(port)], { env });
      expect(start.code).toBe(9);
      expect(start.stderr).toContain("not svc");
      mkdirSync(join(sandbox.home, "client"), { recursive: true });
      writeFileSync(
        join(sandbox.home, "client", "config.json"),
        JSON.stringify({ daemon_base_url: `http://127.0.0.1:${port}` }),
      );
      const status = await sandbox.run(["daemon", "status", "--json"], { env });
      expect(JSON.parse(status.stdout)).toMatchObject({ running: false, port_taken_by: "not_svc" });
      const stop = await sandbox.run(["daemon", "stop", "--json"], { env });
      expect(JSON.parse(stop.stdout)).toEqual({ stopped: false, port_taken_by: "not_svc" });
      const whoami = await sandbox.run(["whoami"], { env });
      expect(whoami.code).toBe(9);
      expect(whoami.stderr).toContain("svc daemon start --port");
    } finally {
      await sandbox.destroy();
    }
  });
});

describe("a second daemon for a home whose daemon runs", () => {
  /** The `svc daemon serve` processes of A's home, by their command lines (Linux /proc). */
  function servesOfA(): number[] {
    return readdirSync("/proc")
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
          const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
          return cmdline.includes("daemon\0serve") && environ.includes(`SVC_HOME=${a.home}\0`);
        } catch {
          return false;
        }
      })
      .map(Number);
  }

  it("is not started by a command pointed at another port: it names where the daemon runs (exit 9)", async () => {
    const running = servesOfA();
    expect(running).toHaveLength(1);
    const elsewhere = `http://127.0.0.1:${await freePort()}`;
    const whoami = await a.run(["whoami", "--json"], { env: { SVC_BASE_URL: elsewhere } });
    expect(whoami.code).toBe(9);
    const message = JSON.parse(whoami.stdout).message as string;
    expect(message).toContain(`daemon of ${a.home} runs at http://127.0.0.1:${portA}`);
    expect(message).toContain("SVC_BASE_URL");
    expect(servesOfA()).toEqual(running);
    expect(await status(a)).toMatchObject({ running: true, url: `http://127.0.0.1:${portA}` });
  });

  it("refuses to serve in the foreground beside it (exit 4), and leaves it and its store serving", async () => {
    const running = servesOfA();
    const port = await freePort();
    const second = await a.run(["daemon", "serve", "--port", String(port)], NO_URL);
    expect(second.code).toBe(4);
    expect(second.stderr).toContain(
      `the daemon of ${a.home} is already running at http://127.0.0.1:${portA}`,
    );
    expect(second.stderr).toContain("svc daemon stop");
    expect(servesOfA()).toEqual(running);
    expect(readFileSync(join(a.home, "server", "daemon.lock"), "utf8").trim()).toBe(String(running[0]));
    const whoami = await a.run(["whoami", "--json"], NO_URL);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout).daemon_url).toBe(`http://127.0.0.1:${portA}`);
  });

  it("gives way once the daemon is stopped; a lock left by a daemon that died is taken over", async () => {
    expect((await a.run(["daemon", "stop"], NO_URL)).code).toBe(0);
    expect(existsSync(join(a.home, "server", "daemon.lock"))).toBe(false);
    // As after a crash: the lock names a pid that is gone.
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    writeFileSync(join(a.home, "server", "daemon.lock"), `${dead}\n`);
    const start = await a.run(["daemon", "start", "--json"], NO_URL);
    expect(start.code, start.stderr).toBe(0);
    const started = JSON.parse(start.stdout) as Status;
    expect(started).toMatchObject({ running: true, url: `http://127.0.0.1:${portA}` });
    expect(readFileSync(join(a.home, "server", "daemon.lock"), "utf8").trim()).toBe(String(started.pid));
  });
});
