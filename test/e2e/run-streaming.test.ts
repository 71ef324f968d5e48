/**
 * `svc run` end to end, the transport under load: many concurrent requests, a large download with
 * the proxy's memory flat, a large upload, server-sent events arriving as they are sent, and a
 * WebSocket through the proxy, all on an intercepted host (so every byte passes the scrubber).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SvcSandbox } from "../support/cli.ts";
import { type SeenRequest, startProxiedSandbox, type Upstream } from "../support/upstream.ts";

const NODE = process.execPath;
const PLACEHOLDER = "svc-proxy-managed";
const KEY = `sk-canary-${randomBytes(16).toString("hex")}`;
const MiB = 1024 * 1024;

/** Resident memory of a process in bytes, from /proc (Linux). */
function rssOf(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

describe("svc run: concurrency, large bodies, streaming, WebSocket", () => {
  let upstream: Upstream;
  let sandbox: SvcSandbox;
  let proxied: Awaited<ReturnType<typeof startProxiedSandbox>>;
  let scratch: string;

  const tagged = (tag: string): SeenRequest[] =>
    upstream.seen.filter((request) => request.url.includes(`t=${tag}`));
  const expectClean = (text: string) => expect(text).not.toContain(KEY);

  beforeAll(async () => {
    proxied = await startProxiedSandbox(["api.openai.com"]);
    ({ upstream, sandbox } = proxied);
    scratch = mkdtempSync(join(tmpdir(), "svc-run-streaming-"));
    const login = await sandbox.run(["login", "openai"], { input: `${KEY}\n` });
    expect(login.code, login.stderr).toBe(0);
  });
  afterAll(async () => {
    await proxied?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("200 concurrent keep-alive requests from one child are all injected", async () => {
    const tag = randomBytes(4).toString("hex");
    const child = `
const urls = Array.from({ length: 200 }, (_, i) => "https://api.openai.com/echo?t=${tag}&i=" + i);
const answers = await Promise.all(urls.map(async (url) => {
  const r = await fetch(url, { headers: { connection: "keep-alive" } });
  return { status: r.status, auth: (await r.json()).headers.authorization };
}));
console.log(JSON.stringify({
  ok: answers.filter((a) => a.status === 200).length,
  placeholders: answers.filter((a) => a.auth === "${PLACEHOLDER}").length,
}));
`;
    const result = await sandbox.run(["run", "--", NODE, "--input-type=module", "-e", child]);
    expect(result.code, result.stderr).toBe(0);
    expectClean(result.stdout + result.stderr);
    expect(JSON.parse(result.stdout)).toEqual({ ok: 200, placeholders: 200 });
    const seen = tagged(tag);
    expect(seen).toHaveLength(200);
    expect(new Set(seen.map((request) => new URL(request.url, "https://x").searchParams.get("i"))).size).toBe(
      200,
    );
    for (const request of seen) expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("a 200 MiB download streams through while svc's memory stays flat", async () => {
    const go = join(scratch, "go-download");
    // The child waits (bounded) for the go file, so svc's resting memory is measured first.
    const script = `echo ready; i=0; while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done; curl -sS -o /dev/null -w '%{http_code} %{size_download}' "https://api.openai.com/bytes?mb=200"`;
    const running = sandbox.start(["run", "--", "sh", "-c", script, "sh", go], { timeoutMs: 60_000 });
    await running.waitFor("stdout", /ready/);
    const pid = running.pid!;
    const resting = rssOf(pid)!;
    expect(resting).toBeGreaterThan(0);
    let peak = resting;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssOf(pid) ?? 0);
    }, 100);
    const started = performance.now();
    writeFileSync(go, "");
    const result = await running.result.finally(() => clearInterval(sampler));
    const seconds = (performance.now() - started) / 1000;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`200 ${200 * MiB}`);
    expect(peak - resting).toBeLessThan(150 * MiB);
    console.info(
      `200 MiB download: ${seconds.toFixed(1)} s; svc RSS ${(resting / MiB).toFixed(0)} MiB at rest, peak +${((peak - resting) / MiB).toFixed(0)} MiB`,
    );
  });

  it("a child that abandons a large download ends the upstream download too, while svc run goes on", async () => {
    upstream.downloads.length = 0;
    const go = join(scratch, "go-abandon");
    // The child reads 1 MiB of a 1 GiB download, drops the request, then stays alive (bounded)
    // until the test has looked at the upstream.
    const child = `
const { existsSync } = await import("node:fs");
const controller = new AbortController();
const response = await fetch("https://api.openai.com/bytes?mb=1024", { signal: controller.signal });
const reader = response.body.getReader();
let got = 0;
while (got < ${MiB}) got += (await reader.read()).value.length;
controller.abort();
console.log("abandoned after", got);
for (let i = 0; i < 300 && !existsSync(${JSON.stringify(go)}); i++) await new Promise((r) => setTimeout(r, 50));
`;
    const running = sandbox.start(["run", "--", NODE, "--input-type=module", "-e", child], {
      timeoutMs: 30_000,
    });
    try {
      await running.waitFor("stdout", /abandoned after \d+/);
      const [download] = upstream.downloads;
      // svc stopped reading when the child did, and closed the upstream connection when it left.
      for (let i = 0; i < 100 && !download?.closedEarly; i++) await new Promise((r) => setTimeout(r, 50));
      expect(download?.closedEarly).toBe(true);
      expect(download!.sent).toBeLessThan(64 * MiB);
    } finally {
      writeFileSync(go, "");
    }
    const result = await running.result;
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });

  it("a chunked answer larger than the whole-body limit, arriving at once, streams through complete", async () => {
    // Held as a possible whole body until it passes 64 KiB, then streamed from the first byte on.
    const child = `
const response = await fetch("https://api.openai.com/bytes?mb=3&chunked=1");
const body = Buffer.from(await response.arrayBuffer());
console.log(response.status, response.headers.get("content-length"), body.length, body.every((b) => b === 0x61));
`;
    const result = await sandbox.run(["run", "--", NODE, "-e", child]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(`200 null ${3 * MiB} true`);
  });

  it("a 50 MiB upload arrives complete", async () => {
    const file = join(scratch, "upload.bin");
    const body = randomBytes(50 * MiB);
    writeFileSync(file, body);
    const tag = randomBytes(4).toString("hex");
    const result = await sandbox.run([
      "run",
      "--",
      "curl",
      "-sS",
      "-X",
      "POST",
      "-H",
      "content-type: application/octet-stream",
      "-T",
      file,
      `https://api.openai.com/upload?t=${tag}`,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      bytes: 50 * MiB,
      sha256: createHash("sha256").update(body).digest("hex"),
    });
    const [seen] = tagged(tag);
    expect(seen).toMatchObject({ method: "POST", path: "/upload" });
    expect(seen!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it("server-sent events reach the child as they are sent, not when the stream ends", async () => {
    const child = `
const started = Date.now();
const response = await fetch("https://api.openai.com/sse?n=4&ms=150");
const decoder = new TextDecoder();
const chunks = [];
for await (const chunk of response.body) chunks.push({ at: Date.now() - started, text: decoder.decode(chunk) });
console.log(JSON.stringify({ status: response.status, type: response.headers.get("content-type"), chunks, end: Date.now() - started }));
`;
    const result = await sandbox.run(["run", "--", NODE, "--input-type=module", "-e", child]);
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout) as {
      status: number;
      type: string;
      chunks: Array<{ at: number; text: string }>;
      end: number;
    };
    expect(answer).toMatchObject({ status: 200, type: "text/event-stream" });
    expect(answer.chunks.map((chunk) => chunk.text).join("")).toBe(
      [1, 2, 3, 4].map((n) => `data: event ${n}\n\n`).join(""),
    );
    const first = answer.chunks[0]!;
    expect(first.text).toBe("data: event 1\n\n");
    // Three more events, 150 ms apart, were still to come when the first arrived.
    expect(answer.end - first.at).toBeGreaterThanOrEqual(300);
  });

  it("a WebSocket works through the proxy, with the credential on the handshake only", async () => {
    const tag = randomBytes(4).toString("hex");
    // Node's built-in WebSocket (undici) follows NODE_USE_ENV_PROXY like fetch does.
    const child = `
const socket = new WebSocket("wss://api.openai.com/socket?t=${tag}");
const messages = [];
const timer = setTimeout(() => { console.log("timeout", JSON.stringify(messages)); process.exit(9); }, 10_000);
socket.onmessage = (event) => {
  messages.push(String(event.data));
  if (messages.length === 1) socket.send("hello through svc");
  else socket.close(1000);
};
socket.onclose = (event) => {
  clearTimeout(timer);
  console.log(JSON.stringify({ code: event.code, messages }));
};
socket.onerror = (event) => { console.log("error", event.message); process.exit(8); };
`;
    const result = await sandbox.run(["run", "--", NODE, "-e", child]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expectClean(result.stdout + result.stderr);
    const answer = JSON.parse(result.stdout) as { code: number; messages: string[] };
    expect(answer.code).toBe(1000);
    // The upstream echoes the handshake's Authorization: the child sees it scrubbed.
    expect(answer.messages).toEqual([JSON.stringify({ authorization: PLACEHOLDER }), "hello through svc"]);
    const [handshake, ...more] = tagged(tag);
    expect(more).toEqual([]);
    expect(handshake).toMatchObject({ upgrade: true, host: "api.openai.com", path: "/socket" });
    expect(handshake!.headers.authorization).toBe(`Bearer ${KEY}`);
    // The client offered permessage-deflate; the proxy withheld it so frames stay scrubbable.
    expect(handshake!.headers["sec-websocket-extensions"]).toBeUndefined();
  });
});
