/**
 * What a person sees when `svc run` cannot serve a request, through the SDKs agents use: the real
 * openai, Anthropic and Octokit packages and python-requests as children of the real CLI. Each must
 * print svc's sentence, not a bare `502 "svc_proxy"`.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, SvcSandbox } from "../support/cli.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";

const NODE = process.execPath;
const OPENAI_KEY = `sk-canary-${randomBytes(16).toString("hex")}`;

/** A Node child (ESM, run from the checkout so the SDK packages resolve) that prints `e.message`. */
const nodeChild = (body: string) => [
  NODE,
  "--input-type=module",
  "-e",
  `try { ${body}; console.log("no error"); } catch (error) { console.log("ERROR " + error.message); }`,
];

describe("svc run: errors the SDKs show", () => {
  let upstream: Upstream;
  let untrusted: Upstream;
  let sandbox: SvcSandbox;

  beforeAll(async () => {
    upstream = await startUpstream();
    // A second server with a CA of its own, which svc is not told to trust.
    untrusted = await startUpstream();
    const dead = await freePort();
    sandbox = await SvcSandbox.create({
      NODE_EXTRA_CA_CERTS: upstream.caPath,
      SVC_PROXY_CONNECT_TO: [
        upstream.connectTo(["api.anthropic.com", "api.github.com"]),
        untrusted.connectTo(["api.mistral.ai"]),
        // Nothing listens there: the upstream is down.
        `api.openai.com:443:127.0.0.1:${dead}`,
      ].join(","),
    });
    const login = await sandbox.run(["login", "openai"], { input: `${OPENAI_KEY}\n` });
    expect(login.code, login.stderr).toBe(0);
  });
  afterAll(async () => {
    await sandbox?.destroy();
    await upstream?.close();
    await untrusted?.close();
  });

  const run = async (command: string[], flags: string[] = []) => {
    const result = await sandbox.run(["run", ...flags, "--", ...command]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).not.toContain(OPENAI_KEY);
    return result.stdout.trim();
  };

  it("openai: an unreachable upstream reads `502 svc proxy could not reach api.openai.com:443: ...`", async () => {
    const printed = await run(
      nodeChild(`const { default: OpenAI } = await import("openai");
        await new OpenAI({ maxRetries: 0 }).models.list()`),
    );
    expect(printed).toMatch(/^ERROR 502 svc proxy could not reach api\.openai\.com:443: .*ECONNREFUSED/);
  });

  it("Anthropic: a provider without a connection reads `403 svc: ... run `svc login anthropic``", async () => {
    const printed = await run(
      nodeChild(`const { default: Anthropic } = await import("@anthropic-ai/sdk");
        await new Anthropic({ apiKey: "unused", maxRetries: 0 }).messages.create({ model: "claude-x", max_tokens: 8, messages: [{ role: "user", content: "hi" }] })`),
      ["--deny-unmatched"],
    );
    expect(printed).toMatch(
      /^ERROR 403 svc: https:\/\/api\.anthropic\.com\/v1\/messages belongs to anthropic/,
    );
    expect(printed).toContain("`svc login anthropic`");
  });

  it("Octokit: a provider without a connection names the `svc login` to run", async () => {
    const printed = await run(
      nodeChild(`const { Octokit } = await import("@octokit/rest");
        await new Octokit({ request: { retries: 0 } }).users.getAuthenticated()`),
      ["--deny-unmatched"],
    );
    expect(printed).toMatch(/^ERROR svc: https:\/\/api\.github\.com\/user belongs to .*github/);
    expect(printed).toContain("`svc login github");
  });

  it("python-requests: raise_for_status() prints svc's sentence as the reason", async () => {
    const printed = await run([
      "python3",
      "-c",
      "import requests\ntry:\n  requests.get('https://api.openai.com/v1/models').raise_for_status()\nexcept Exception as e:\n  print('ERROR', e)",
    ]);
    expect(printed).toMatch(
      /^ERROR 502 Server Error: svc proxy could not reach api\.openai\.com:443: .*ECONNREFUSED.* for url: https:\/\/api\.openai\.com\/v1\/models$/,
    );
  });

  it("every proxy answer names its failure in x-svc-error, beside the JSON body", async () => {
    const printed = await run(["curl", "-sS", "-D", "-", "https://api.openai.com/v1/models"]);
    expect(printed).toMatch(/^HTTP\/1\.1 502 svc proxy could not reach/m);
    expect(printed).toMatch(/^x-svc-error: EndpointUnreachableError\r?$/m);
    const body = JSON.parse(printed.slice(printed.indexOf("{"))) as {
      error: { type: string; code: string; message: string };
      message: string;
    };
    expect(body.error).toEqual({
      type: "svc_proxy",
      code: "EndpointUnreachableError",
      message: body.message,
    });
  });

  it("an upstream whose certificate svc does not trust: the 502 says how to trust it for svc, not Node's flag", async () => {
    const printed = await run(["curl", "-sS", "-D", "-", "https://api.mistral.ai/v1/models"]);
    expect(printed).toMatch(/^x-svc-error: UntrustedUpstreamCertificate\r?$/m);
    expect(printed).toContain("svc proxy does not trust the certificate of api.mistral.ai:443");
    expect(printed).toContain("start svc run with NODE_EXTRA_CA_CERTS=");
    expect(printed).not.toContain("--use-system-ca");
    expect(untrusted.seen).toEqual([]);
  });
});
