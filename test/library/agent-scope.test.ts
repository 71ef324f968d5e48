/**
 * The library signing as an agent with a scope: what it may use works as before; anything else
 * fails with OperationNotAllowedError naming the scope, and nothing goes out.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setAgentScope } from "../../src/client/agents-api.ts";
import {
  type ClientOptions,
  createClient,
  OperationNotAllowedError,
  type SvcError,
} from "../../src/client/index.ts";
import { privateKeyToPem } from "../../src/identity/keypair.ts";
import { connectToFetch } from "../support/connect-fetch.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const OPENAI_KEY = `sk-lib-${hex(16)}`;
const ANTHROPIC_KEY = `sk-ant-lib-${hex(16)}`;
const HOSTS = ["api.openai.com", "api.anthropic.com"];

let t: TestDaemon;
let upstream: Upstream;
let agent: ReturnType<typeof createClient>;

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestDaemon(), startUpstream()]);
  await loginWithApiKey(t.client, "openai", OPENAI_KEY);
  await loginWithApiKey(t.client, "anthropic", ANTHROPIC_KEY);
  const created = await t.newIdentity();
  await setAgentScope(t.client, created.identity.handle, ["anthropic"]);
  const options: ClientOptions = {
    env: { SVC_HOME: t.layout.home, SVC_BASE_URL: t.daemon.url },
    fetch: connectToFetch(upstream.connectTo(HOSTS), readFileSync(upstream.caPath, "utf8")),
    identity: { handle: created.identity.handle, privateKey: privateKeyToPem(created.identity.privateKey) },
  };
  agent = createClient(options);
});
afterAll(async () => {
  await Promise.all([t?.stop(), upstream?.close()]);
});

describe("the library as a scoped agent", () => {
  it("gets the headers and fetches for the provider in its scope", async () => {
    expect(await agent.headers("anthropic")).toEqual({ "x-api-key": ANTHROPIC_KEY });
    const tag = hex(4);
    const response = await agent.fetch(`https://api.anthropic.com/echo?t=${tag}`);
    expect(response.status).toBe(200);
    expect(upstream.seen.find((seen) => seen.url.includes(tag))?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
  });

  it("refuses headers, headersFor and fetch for a provider outside it, sending nothing", async () => {
    for (const attempt of [
      () => agent.headers("openai"),
      () => agent.headersFor("https://api.openai.com/v1/models"),
      () => agent.fetch(`https://api.openai.com/echo?t=${hex(4)}`),
    ]) {
      const error = (await attempt().catch((caught: unknown) => caught)) as SvcError;
      expect(error).toBeInstanceOf(OperationNotAllowedError);
      expect(error.exitCode).toBe(4);
      expect(error.message).toContain("may use only anthropic (its scope), not openai");
    }
    expect(upstream.seen.filter((seen) => seen.host === "api.openai.com")).toEqual([]);
  });

  it("lists only the connections in its scope", async () => {
    expect((await agent.connections.list()).map((connection) => connection.provider)).toEqual(["anthropic"]);
  });
});
