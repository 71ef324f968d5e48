/**
 * `svc run` with Node children of every maintained (and the system's older) release line: on a
 * Node that predates NODE_USE_ENV_PROXY (the system's Node 20 here), `fetch`, `https.get`, the
 * openai SDK and Octokit must still go through the proxy and get the credential.
 */

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SvcSandbox } from "../support/cli.ts";
import { nodeOfLine } from "../support/node-lines.ts";
import { startProxiedSandbox, type Upstream } from "../support/upstream.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const OPENAI_KEY = `sk-canary-${hex(16)}`;
const GITHUB_KEY = `ghp_${hex(18)}`;
const PLACEHOLDER = "svc-proxy-managed";

/**
 * The child: four clients, each printing what the upstream echoed as its Authorization. CommonJS
 * and dynamic imports, so it runs on every line from the checkout (where the SDKs resolve).
 */
const CHILD = `
const tag = process.argv[1];
const https = require("node:https");
const viaGet = () => new Promise((resolve) => {
  https.get("https://api.openai.com/echo?t=" + tag + "-get", (response) => {
    let body = ""; response.on("data", (d) => { body += d; });
    response.on("end", () => resolve(JSON.parse(body).headers.authorization));
  }).on("error", (error) => resolve("error " + error.code));
});
const viaFetch = () => fetch("https://api.openai.com/echo?t=" + tag + "-fetch")
  .then((r) => r.json()).then((b) => b.headers.authorization, (e) => "error " + (e.cause?.code ?? e.message));
const viaOpenAI = async () => {
  const { default: OpenAI } = await import("openai");
  const client = new OpenAI({ baseURL: "https://api.openai.com", maxRetries: 0 });
  const echoed = await client.get("/echo?t=" + tag + "-openai").catch((e) => ({ error: e.message }));
  return echoed.headers?.authorization ?? "error " + echoed.error;
};
const viaOctokit = async () => {
  const { Octokit } = await import("@octokit/rest");
  const echoed = await new Octokit({ request: { retries: 0 } }).request("GET /echo", { t: tag + "-octokit" })
    .then((r) => r.data, (e) => ({ error: e.message }));
  return echoed.headers?.authorization ?? "error " + echoed.error;
};
(async () => {
  console.log(JSON.stringify({
    version: process.versions.node,
    get: await viaGet(), fetch: await viaFetch(), openai: await viaOpenAI(), octokit: await viaOctokit(),
  }));
})();
`;

describe("svc run: Node children of every release line go through the proxy", () => {
  let upstream: Upstream;
  let sandbox: SvcSandbox;
  let proxied: Awaited<ReturnType<typeof startProxiedSandbox>>;
  const nodes: Array<{ line: number; binary: string }> = [];

  beforeAll(async () => {
    proxied = await startProxiedSandbox(["api.openai.com", "api.github.com"]);
    ({ upstream, sandbox } = proxied);
    await sandbox.loginKeys([
      ["openai", OPENAI_KEY],
      ["github-token", GITHUB_KEY],
    ]);
    for (const line of [20, 22, 24]) nodes.push({ line, binary: await nodeOfLine(line) });
  }, 300_000);
  afterAll(async () => {
    await proxied?.close();
  });

  it("the lines under test include one without NODE_USE_ENV_PROXY support", () => {
    const versions = nodes.map(({ binary }) => spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout);
    expect(versions.map((version) => version.split(".")[0])).toEqual(["v20", "v22", "v24"]);
  });

  it.each([20, 22, 24])(
    "Node %i: fetch, https.get, the openai SDK and Octokit all get the credential",
    async (line) => {
      const { binary } = nodes.find((node) => node.line === line)!;
      const tag = hex(4);
      const result = await sandbox.run(["run", "--", binary, "-e", CHILD, tag]);
      expect(result.code, result.stderr).toBe(0);
      const printed = JSON.parse(result.stdout.trim()) as Record<string, string>;
      expect(printed.version.split(".")[0]).toBe(String(line));
      // Each client saw the upstream's echo of the placeholder: the proxy scrubbed the real key.
      expect(printed).toMatchObject({
        get: PLACEHOLDER,
        fetch: PLACEHOLDER,
        openai: PLACEHOLDER,
        octokit: PLACEHOLDER,
      });
      const seen = (suffix: string) =>
        upstream.seen
          .filter((request) => request.url.includes(`t=${tag}-${suffix}`))
          .map((r) => r.headers.authorization);
      expect(seen("get")).toEqual([`Bearer ${OPENAI_KEY}`]);
      expect(seen("fetch")).toEqual([`Bearer ${OPENAI_KEY}`]);
      expect(seen("openai")).toEqual([`Bearer ${OPENAI_KEY}`]);
      expect(seen("octokit")).toEqual([`Bearer ${GITHUB_KEY}`]);
      expect(result.stdout + result.stderr).not.toContain(OPENAI_KEY);
    },
  );

  it("a child's own NODE_OPTIONS are kept beside svc's preload", async () => {
    const { binary } = nodes.find((node) => node.line === 20)!;
    const result = await sandbox.run(
      [
        "run",
        "--",
        binary,
        "-e",
        "console.log(process.env.NODE_OPTIONS, process.execArgv.length, require('node:os').constants ? 'ok' : '')",
      ],
      { env: { NODE_OPTIONS: "--max-old-space-size=128" } },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^--max-old-space-size=128 --require ".*node-preload\.cjs"/);
  });
});
