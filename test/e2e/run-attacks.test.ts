/**
 * `svc run` against a local attacker: another process (or another OS user) that finds the proxy's
 * port, a child that names another host inside an intercepted tunnel, an SDK that sends the
 * placeholder beside the injected key, and an upstream that echoes the key encoded. The real CLI,
 * daemon and proxy; a local HTTPS upstream reached under real API host names.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import { activeIdentity, clientFor } from "../../src/client/session.ts";
import { homeLayout } from "../../src/core/paths.ts";
import { secretForms } from "../../src/proxy/secret-forms.ts";
import type { RunningCli, SvcSandbox } from "../support/cli.ts";
import { startProxiedSandbox, type Upstream } from "../support/upstream.ts";

const run = promisify(execFile);
const PLACEHOLDER = "svc-proxy-managed";
const NODE = process.execPath;
const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const OPENAI_KEY = `sk-canary-${hex(16)}`;
const ANTHROPIC_KEY = `sk-ant-canary-${hex(16)}`;
const SECRETS = [OPENAI_KEY, ANTHROPIC_KEY];

/** Every form of every secret a careless upstream might echo: none may reach the child. */
function expectNoSecret(text: string): void {
  for (const secret of SECRETS) for (const form of secretForms(secret)) expect(text).not.toContain(form);
}

/**
 * A child that prints its proxy's port, then waits (at most 20 s) for `go` to appear before it
 * exits: a live `svc run` whose proxy the test attacks from outside.
 */
const WAITS_FOR_GO = `
const fs = require("node:fs");
console.log("port=" + new URL(process.env.HTTPS_PROXY).port);
const deadline = Date.now() + 20_000;
const wait = () => (fs.existsSync(process.argv[1]) ? process.exit(0) : Date.now() > deadline ? process.exit(98) : setTimeout(wait, 25));
wait();
`;

/**
 * A child that opens one tunnel per request line given (CONNECT api.openai.com:443 with the proxy
 * credential from its environment, TLS trusting svc's CA bundle), writes the raw request and
 * prints the status code it got back, one per line.
 */
const RAW_TUNNEL = `
const http = require("node:http"), tls = require("node:tls"), fs = require("node:fs");
const proxy = new URL(process.env.HTTPS_PROXY);
const ca = fs.readFileSync(process.env.SSL_CERT_FILE, "utf8");
const auth = "Basic " + Buffer.from(decodeURIComponent(proxy.username) + ":" + decodeURIComponent(proxy.password)).toString("base64");
const once = (raw) => new Promise((resolve) => {
  const connect = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: "api.openai.com:443", headers: { "proxy-authorization": auth } });
  connect.on("connect", (response, socket) => {
    if (response.statusCode !== 200) return resolve("connect " + response.statusCode);
    const secure = tls.connect({ socket, servername: "api.openai.com", ca });
    let data = "";
    secure.on("data", (chunk) => { data += chunk; const m = /^HTTP\\/1\\.1 (\\d{3})/.exec(data); if (m) { resolve(m[1]); secure.destroy(); } });
    secure.on("error", (e) => resolve("error " + e.message));
    secure.write(raw);
  });
  connect.on("error", (e) => resolve("error " + e.message));
  connect.end();
});
(async () => { for (const raw of JSON.parse(process.argv[1])) console.log(await once(raw)); })();
`;

describe("svc run against a local attacker", () => {
  let upstream: Upstream;
  let sandbox: SvcSandbox;
  let proxied: Awaited<ReturnType<typeof startProxiedSandbox>>;
  let scratch: string;
  const seenWith = (tag: string) => upstream.seen.filter((request) => request.url.includes(`t=${tag}`));

  beforeAll(async () => {
    proxied = await startProxiedSandbox(["api.openai.com", "api.anthropic.com"]);
    ({ upstream, sandbox } = proxied);
    scratch = mkdtempSync(join(tmpdir(), "svc-run-attacks-"));
    await sandbox.loginKeys([
      ["openai", OPENAI_KEY],
      ["anthropic", ANTHROPIC_KEY],
    ]);
  });
  afterAll(async () => {
    await proxied?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** Starts a `svc run` whose child waits; returns its proxy port and a way to let it finish. */
  async function liveRun(): Promise<{ port: number; finish(): Promise<void>; running: RunningCli }> {
    const go = join(scratch, `go-${hex(4)}`);
    const running = sandbox.start(["run", "--", NODE, "-e", WAITS_FOR_GO, go], { timeoutMs: 30_000 });
    const [, port] = await running.waitFor("stdout", /port=(\d+)/);
    return {
      port: Number(port),
      running,
      async finish() {
        writeFileSync(go, "");
        const result = await running.result;
        expect(result.code, result.stderr).toBe(0);
      },
    };
  }

  /** curl through the proxy at `proxyUrl` (as uid 65534 with an empty environment if `stranger`). */
  async function curlVia(proxyUrl: string, url: string, stranger = false) {
    const asStranger = [
      "setpriv",
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
      "env",
      "-i",
      "PATH=/usr/bin:/bin",
    ];
    const [command, ...args] = [
      ...(stranger ? asStranger : []),
      "curl",
      "-sS",
      "-k",
      "-x",
      proxyUrl,
      "-w",
      "\n%{http_code}",
      url,
    ];
    try {
      const { stdout, stderr } = await run(command!, args, { timeout: 15_000 });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  it("another process that finds the proxy's port gets 407 for CONNECT and for plain HTTP; nothing reaches the upstream", async () => {
    const { port, finish } = await liveRun();
    const tags = [hex(4), hex(4), hex(4)];
    const noCredential = await curlVia(
      `http://127.0.0.1:${port}`,
      `https://api.openai.com/echo?t=${tags[0]}`,
    );
    expect(noCredential.code).not.toBe(0);
    expect(noCredential.stderr).toMatch(/407/);
    const wrongCredential = await curlVia(
      `http://svc:${"A".repeat(43)}@127.0.0.1:${port}`,
      `https://api.openai.com/echo?t=${tags[1]}`,
    );
    expect(wrongCredential.code).not.toBe(0);
    expect(wrongCredential.stderr).toMatch(/407/);
    const plain = await curlVia(`http://127.0.0.1:${port}`, `http://api.openai.com/echo?t=${tags[2]}`);
    expect(plain.stdout.trim().split("\n").at(-1)).toBe("407");
    expect(plain.stdout).toContain("svc run");

    // What a hand-written client sees: the status and the scheme to answer with.
    const answer = await new Promise<{ status: number; challenge: string | undefined }>((resolve, reject) => {
      const connect = http.request({
        host: "127.0.0.1",
        port,
        method: "CONNECT",
        path: "api.openai.com:443",
      });
      connect.on("connect", (response, socket) => {
        socket.destroy();
        resolve({ status: response.statusCode ?? 0, challenge: response.headers["proxy-authenticate"] });
      });
      connect.on("error", reject);
      connect.end();
    });
    expect(answer).toEqual({ status: 407, challenge: 'Basic realm="svc run"' });
    await finish();
    for (const tag of tags) expect(seenWith(tag)).toEqual([]);
    expectNoSecret(noCredential.stdout + noCredential.stderr + plain.stdout);
  });

  it.runIf(process.getuid?.() === 0 && existsSync("/usr/bin/setpriv"))(
    "another OS user with an empty environment gets 407 and the upstream sees nothing",
    async () => {
      const { port, finish } = await liveRun();
      const tag = hex(4);
      const stranger = await curlVia(
        `http://127.0.0.1:${port}`,
        `https://api.openai.com/echo?t=${tag}`,
        true,
      );
      await finish();
      expect(stranger.code).not.toBe(0);
      expect(stranger.stderr).toMatch(/407/);
      expect(seenWith(tag)).toEqual([]);
    },
  );

  it("the child's own clients carry the credential: python requests and git reach the upstream with the key injected", async () => {
    const tag = hex(4);
    const python = await sandbox.run([
      "run",
      "--",
      "python3",
      "-c",
      "import sys, requests; r = requests.get(sys.argv[1]); print(r.status_code, r.json()['headers']['authorization'])",
      `https://api.openai.com/echo?t=${tag}`,
    ]);
    expect(python.code, python.stderr).toBe(0);
    expect(python.stdout.trim()).toBe(`200 ${PLACEHOLDER}`);
    expect(seenWith(tag)[0]?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);

    // git's smart HTTP discovery is a GET through the same proxy; the upstream is no git server.
    const gitTag = hex(4);
    const git = await sandbox.run([
      "run",
      "--",
      "git",
      "ls-remote",
      `https://api.openai.com/repo-${gitTag}.git`,
    ]);
    expect(git.stderr).not.toMatch(/407|Proxy/);
    const [seen] = upstream.seen.filter((request) => request.path.includes(`repo-${gitTag}`));
    expect(seen?.path).toBe(`/repo-${gitTag}.git/info/refs`);
    expect(seen?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expectNoSecret(python.stdout + python.stderr + git.stdout + git.stderr);
  });

  it("inside a tunnel, a request for another host (Host, two Hosts, absolute form) gets 421 and is audited; the CONNECT host is served", async () => {
    const tag = hex(4);
    const requests = [
      `GET /echo?t=${tag}-host HTTP/1.1\r\nHost: evil.test\r\n\r\n`,
      `GET /echo?t=${tag}-two HTTP/1.1\r\nHost: api.openai.com\r\nHost: evil.test\r\n\r\n`,
      `GET https://evil.test/echo?t=${tag}-absolute HTTP/1.1\r\nHost: api.openai.com\r\n\r\n`,
      `GET /echo?t=${tag}-same HTTP/1.1\r\nHost: API.openai.com.:443\r\n\r\n`,
      `GET https://api.openai.com/echo?t=${tag}-same-absolute HTTP/1.1\r\nHost: api.openai.com\r\n\r\n`,
    ];
    const result = await sandbox.run(["run", "--", NODE, "-e", RAW_TUNNEL, JSON.stringify(requests)]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual(["421", "421", "421", "200", "200"]);
    for (const refused of ["host", "two", "absolute"]) expect(seenWith(`${tag}-${refused}`)).toEqual([]);
    const same = seenWith(`${tag}-same`);
    expect(same.map((request) => [request.path, request.headers.authorization])).toEqual([
      ["/echo", `Bearer ${OPENAI_KEY}`],
      ["/echo", `Bearer ${OPENAI_KEY}`],
    ]);
    // The origin form went upstream, not the absolute URL.
    expect(seenWith(`${tag}-same-absolute`)[0]?.url).toBe(`/echo?t=${tag}-same-absolute`);

    const layout = homeLayout(sandbox.home);
    const client = clientFor(layout, sandbox.env, activeIdentity(layout));
    const page = await client.get<AuditPageRecord>("/api/audit/events?event=proxy.request&limit=500");
    const misdirected = page.events.filter((event) => event.detail?.decision === "misdirected");
    expect(misdirected).toHaveLength(3);
    for (const event of misdirected)
      expect(event).toMatchObject({
        status: "failure",
        detail: { host: "api.openai.com", status_code: 421 },
      });
  });

  it("a placeholder header beside the injected key is removed (the Anthropic SDK's Authorization: Bearer)", async () => {
    const tag = hex(4);
    const result = await sandbox.run([
      "run",
      "--",
      "curl",
      "-sS",
      "-H",
      `authorization: Bearer ${PLACEHOLDER}`,
      "-H",
      `x-api-key: ${PLACEHOLDER}`,
      "-H",
      `x-goog-api-key: ${PLACEHOLDER}`,
      "-H",
      "x-kept: an ordinary value",
      `https://api.anthropic.com/echo?t=${tag}`,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const [seen] = seenWith(tag);
    expect(seen?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers["x-goog-api-key"]).toBeUndefined();
    expect(seen?.headers["x-kept"]).toBe("an ordinary value");
    expect(JSON.stringify(seen?.headers)).not.toContain(PLACEHOLDER);
  });

  it("an upstream that echoes the key base64-, base64url- or percent-encoded leaks none of them", async () => {
    const tags = [hex(4), hex(4)];
    const script = [
      `curl -sS -D - "https://api.openai.com/echo-encoded?t=${tags[0]}"`,
      `curl -sS -D - "https://api.anthropic.com/echo-encoded?t=${tags[1]}"`,
    ].join(" && echo && ");
    const result = await sandbox.run(["run", "--", "sh", "-c", script]);
    expect(result.code, result.stderr).toBe(0);
    for (const tag of tags) expect(seenWith(tag)).toHaveLength(1);
    expect(result.stdout).toMatch(/^x-echo-basic: /im);
    const bodies = (result.stdout.match(/\{"base64".*\}/g) ?? []).map((body) => JSON.parse(body));
    expect(bodies).toHaveLength(2);
    expectNoSecret(result.stdout + result.stderr);
    // Decoded again, none of the echoes holds a key either.
    for (const body of bodies as Array<Record<string, string>>) {
      const decoded = [
        Buffer.from(body.base64!, "base64").toString(),
        Buffer.from(body.base64url!, "base64url").toString(),
        Buffer.from(body.basic!, "base64").toString(),
        Buffer.from(body.header_base64!, "base64").toString(),
        decodeURIComponent(body.percent!.replace(/%(?![0-9a-f]{2})/gi, "%25")),
      ].join("\n");
      for (const secret of SECRETS) expect(decoded).not.toContain(secret);
    }
  });
});
