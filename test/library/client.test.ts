/**
 * The library against a real daemon: finding it, signing as the CLI's identity (or a key given in
 * memory), the header lookups, the redacted records, and `fetch` reaching a local HTTPS upstream
 * under real API host names.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateClientConfig } from "../../src/client/config.ts";
import {
  AuthenticationFailedError,
  type ClientOptions,
  ConnectionNotFoundError,
  createClient,
  DaemonUnavailableError,
  NotFoundError,
  ProviderNotFoundError,
  type SvcError,
} from "../../src/client/index.ts";
import { IdentityFiles } from "../../src/identity/identity-files.ts";
import { privateKeyToPem } from "../../src/identity/keypair.ts";
import { freePort } from "../support/cli.ts";
import { connectToFetch } from "../support/connect-fetch.ts";
import { customProvider, loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { type SeenRequest, startUpstream, type Upstream } from "../support/upstream.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const OPENAI_KEY = `sk-lib-${hex(16)}`;
const OPENAI_WORK_KEY = `sk-libwork-${hex(16)}`;
const ANTHROPIC_KEY = `sk-ant-lib-${hex(16)}`;
const GITHUB_KEY = `ghp_${hex(18)}`;
const GITHUB_WEB_KEY = `ghweb_${hex(12)}`;
const HOSTS = ["api.openai.com", "api.anthropic.com", "api.github.com", "github.com", "example.com"];

let t: TestDaemon;
let upstream: Upstream;
let transport: ClientOptions["fetch"];
/** What a user's environment looks like after `svc login ...`: SVC_HOME and the daemon's URL. */
let env: NodeJS.ProcessEnv;

/** A client as an agent on this machine makes it, reaching the upstream under real host names. */
const client = (options: ClientOptions = {}) => createClient({ env, fetch: transport, ...options });

/** The upstream's record of the one request tagged `t=<tag>`. */
const seenWith = (tag: string): SeenRequest[] =>
  upstream.seen.filter((seen) => seen.url.includes(`t=${tag}`));

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestDaemon(), startUpstream()]);
  transport = connectToFetch(upstream.connectTo(HOSTS), readFileSync(upstream.caPath, "utf8"));
  updateClientConfig(t.layout.clientConfig, { active_identity: t.identity.handle });
  env = { SVC_HOME: t.layout.home, SVC_BASE_URL: t.daemon.url };
  await loginWithApiKey(t.client, "openai", OPENAI_KEY);
  await loginWithApiKey(t.client, "openai", OPENAI_WORK_KEY, { connection: "work" });
  await loginWithApiKey(t.client, "anthropic", ANTHROPIC_KEY);
  await loginWithApiKey(t.client, "github-token", GITHUB_KEY);
  // A provider claiming github.com, where the bundled `github` has its OAuth endpoints.
  await t.client.post("/api/providers", customProvider("github-web-lib", { api_url: "github.com" }));
  await loginWithApiKey(t.client, "github-web-lib", GITHUB_WEB_KEY);
});
afterAll(async () => {
  await Promise.all([t?.stop(), upstream?.close()]);
});

describe("finding the daemon", () => {
  it("uses SVC_BASE_URL, then the saved daemon_base_url, then the loopback default", async () => {
    expect(client().baseUrl).toBe(t.daemon.url);
    const saved = { SVC_HOME: t.layout.home };
    updateClientConfig(t.layout.clientConfig, { daemon_base_url: `${t.daemon.url}/` });
    try {
      const configured = createClient({ env: saved });
      expect(configured.baseUrl).toBe(t.daemon.url);
      expect((await configured.providers.get("openai")).name).toBe("openai");
    } finally {
      updateClientConfig(t.layout.clientConfig, { daemon_base_url: undefined });
    }
    expect(createClient({ env: saved }).baseUrl).toBe("http://127.0.0.1:7998");
    expect(createClient({ env: saved, baseUrl: "http://127.0.0.1:1" }).baseUrl).toBe("http://127.0.0.1:1");
  });
});

describe("headers", () => {
  it("resolves the default connection's header, or a named one", async () => {
    const svc = client();
    expect(await svc.headers("openai")).toEqual({ Authorization: `Bearer ${OPENAI_KEY}` });
    expect(await svc.headers("openai", { connection: "work" })).toEqual({
      Authorization: `Bearer ${OPENAI_WORK_KEY}`,
    });
    expect(await svc.headers("anthropic")).toEqual({ "x-api-key": ANTHROPIC_KEY });
  });

  it("fails with the CLI's error classes", async () => {
    const svc = client();
    const missing = await svc.headers("openai", { connection: "nope" }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(ConnectionNotFoundError);
    expect((missing as SvcError).exitCode).toBe(3);
    const unknown = await svc.headers("no-such-provider").catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(ProviderNotFoundError);
    expect((unknown as SvcError).exitCode).toBe(4);
  });

  it("headersFor gives what fetch would add, and nothing for OAuth endpoints or unknown hosts", async () => {
    const svc = client({ connections: { openai: "work" } });
    expect(await svc.headersFor("https://api.openai.com/v1/models")).toEqual({
      Authorization: `Bearer ${OPENAI_WORK_KEY}`,
    });
    expect(await svc.headersFor(new URL("https://api.github.com/user"))).toEqual({
      Authorization: `Bearer ${GITHUB_KEY}`,
    });
    expect(await svc.headersFor("https://github.com/login/oauth/access_token")).toEqual({});
    expect(await svc.headersFor("https://example.com/")).toEqual({});
    expect(await svc.headersFor("http://api.openai.com/v1/models")).toEqual({});
  });

  it("is never cached: a key replaced with `svc login --force` is used by the next call", async () => {
    const svc = client();
    await loginWithApiKey(t.client, "openai", OPENAI_WORK_KEY, { connection: "rotating" });
    expect(await svc.headers("openai", { connection: "rotating" })).toEqual({
      Authorization: `Bearer ${OPENAI_WORK_KEY}`,
    });
    const rotated = `sk-rotated-${hex(16)}`;
    await loginWithApiKey(t.client, "openai", rotated, { connection: "rotating", force: true });
    expect(await svc.headers("openai", { connection: "rotating" })).toEqual({
      Authorization: `Bearer ${rotated}`,
    });
  });
});

describe("connections and providers", () => {
  it("lists and gets connections with secrets redacted", async () => {
    const svc = client();
    const all = await svc.connections.list();
    expect(all.map((c) => `${c.provider}/${c.connection}`)).toEqual(
      expect.arrayContaining(["openai/default", "openai/work", "anthropic/default"]),
    );
    const openai = await svc.connections.list({ provider: "openai" });
    expect(new Set(openai.map((c) => c.provider))).toEqual(new Set(["openai"]));
    const byDefault = await svc.connections.get("openai");
    expect(byDefault).toMatchObject({ provider: "openai", connection: "default", is_default: true });
    expect(await svc.connections.get("openai", "work")).toMatchObject({
      connection: "work",
      is_default: false,
    });
    const text = JSON.stringify([all, byDefault]);
    for (const secret of [OPENAI_KEY, OPENAI_WORK_KEY, ANTHROPIC_KEY, GITHUB_KEY])
      expect(text).not.toContain(secret);
    await expect(svc.connections.get("groq")).rejects.toBeInstanceOf(ConnectionNotFoundError);
  });

  it("lists providers and gets a definition", async () => {
    const svc = client();
    const providers = await svc.providers.list();
    expect(providers.length).toBeGreaterThan(50);
    expect(providers.find((p) => p.name === "github-web-lib")).toMatchObject({ source: "custom" });
    expect(await svc.providers.get("anthropic")).toMatchObject({
      name: "anthropic",
      source: "bundled",
      api_key: { header_name: "x-api-key" },
    });
    await expect(svc.providers.get("no-such-provider")).rejects.toBeInstanceOf(ProviderNotFoundError);
  });
});

describe("fetch", () => {
  it("adds the default connection's key on a matched host, over the placeholder an SDK sent", async () => {
    const tag = hex(4);
    const response = await client().fetch(`https://api.openai.com/echo?t=${tag}`, {
      headers: { authorization: "Bearer svc-proxy-managed", "x-trace": "kept" },
    });
    expect(response.status).toBe(200);
    const [seen, ...more] = seenWith(tag);
    expect(more).toEqual([]);
    expect(seen).toMatchObject({ host: "api.openai.com", path: "/echo" });
    expect(seen!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(seen!.headers["x-trace"]).toBe("kept");
  });

  it("uses the connection named for the provider, and a header other than Authorization", async () => {
    const svc = client({ connections: { openai: "work" } });
    const [openaiTag, anthropicTag] = [hex(4), hex(4)];
    await svc.fetch(new URL(`https://api.openai.com/v1/models?t=${openaiTag}`));
    await svc.fetch(
      new Request(`https://api.anthropic.com/v1/messages?t=${anthropicTag}`, { method: "POST" }),
    );
    expect(seenWith(openaiTag)[0]!.headers.authorization).toBe(`Bearer ${OPENAI_WORK_KEY}`);
    const anthropic = seenWith(anthropicTag)[0]!;
    expect(anthropic.method).toBe("POST");
    expect(anthropic.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(anthropic.headers.authorization).toBeUndefined();
  });

  it("leaves other hosts and the OAuth endpoints alone, the caller's own headers included", async () => {
    const svc = client();
    const [other, oauth, web] = [hex(4), hex(4), hex(4)];
    await svc.fetch(`https://example.com/echo?t=${other}`, { headers: { authorization: "Bearer mine" } });
    await svc.fetch(`https://github.com/login/oauth/access_token?t=${oauth}`, {
      method: "POST",
      body: "code=x",
    });
    await svc.fetch(`https://github.com/echo?t=${web}`);
    expect(seenWith(other)[0]!.headers.authorization).toBe("Bearer mine");
    expect(seenWith(oauth)[0]!.headers.authorization).toBeUndefined();
    expect(seenWith(web)[0]!.headers.authorization).toBe(`Bearer ${GITHUB_WEB_KEY}`);
  });

  it("streams request and response bodies", async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x62);
    let sent = 0;
    const upload = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 64) return controller.close();
        sent++;
        controller.enqueue(chunk);
      },
    });
    const svc = client();
    const uploaded = await svc.fetch("https://api.openai.com/upload", {
      method: "POST",
      body: upload,
      duplex: "half",
    } as RequestInit);
    expect(await uploaded.json()).toMatchObject({ bytes: 64 * chunk.length });
    const events = await svc.fetch("https://api.openai.com/sse?n=3&ms=20");
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    expect(first.value).toContain("data: event 1");
    await reader.cancel();
  });

  it("follows a redirect hop by hop: the key never reaches another host", async () => {
    const svc = client();
    const [tag, back] = [hex(4), hex(4)];
    const away = encodeURIComponent(`https://example.com/echo?t=${tag}`);
    const response = await svc.fetch(`https://api.anthropic.com/redirect?to=${away}&t=${tag}`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(200);
    const [first, second] = seenWith(tag);
    expect(first).toMatchObject({ host: "api.anthropic.com", method: "POST" });
    expect(first!.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    // 302 after a POST becomes a GET without the body, as in Node's fetch.
    expect(second).toMatchObject({ host: "example.com", method: "GET", path: "/echo" });
    expect(second!.headers["x-api-key"]).toBeUndefined();
    expect(second!.headers["content-type"]).toBeUndefined();
    // A 307 back to the provider keeps the method and body, and gets the key again.
    const home = encodeURIComponent(`https://api.anthropic.com/upload?t=${back}`);
    const kept = await svc.fetch(`https://api.anthropic.com/redirect?status=307&to=${home}&t=${back}`, {
      method: "PUT",
      body: "twelve bytes",
    });
    expect(await kept.json()).toMatchObject({ bytes: 12 });
    expect(seenWith(back).map((seen) => [seen.method, seen.headers["x-api-key"]])).toEqual([
      ["PUT", ANTHROPIC_KEY],
      ["PUT", ANTHROPIC_KEY],
    ]);
    const manual = await svc.fetch(`https://api.anthropic.com/redirect?to=${away}`, { redirect: "manual" });
    expect(manual.status).toBe(302);
  });
});

describe("identities", () => {
  it("signs with a key given in memory (PEM or JWK text from an environment variable)", async () => {
    const agent = await t.newIdentity();
    const pem = privateKeyToPem(agent.identity.privateKey);
    const jwk = JSON.stringify(agent.identity.privateKey.export({ format: "jwk" }));
    for (const privateKey of [pem, jwk]) {
      // No SVC_HOME identity is involved: a container has only the key and the daemon's URL.
      const svc = createClient({
        env: {},
        baseUrl: t.daemon.url,
        identity: { handle: agent.identity.handle, privateKey },
      });
      expect(await svc.headers("openai")).toEqual({ Authorization: `Bearer ${OPENAI_KEY}` });
    }
  });

  it("signs as another local identity named by handle, registering and claiming it like the CLI", async () => {
    const other = new IdentityFiles(t.layout.identities).create();
    const svc = client({ identity: other.handle });
    expect(await svc.headers("openai")).toEqual({ Authorization: `Bearer ${OPENAI_KEY}` });
    await expect(client({ identity: "no-such-agent-1234" }).headers("openai")).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  it("never creates an identity: without one it says how to make one", async () => {
    const empty = `${t.root}/empty-home`;
    const svc = createClient({ env: { SVC_HOME: empty }, baseUrl: t.daemon.url });
    const error = await svc.connections.list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AuthenticationFailedError);
    expect((error as Error).message).toMatch(/no active svc identity .*svc whoami/);
    expect(readdirSync(t.root)).not.toContain("empty-home");
  });

  it("refuses an in-memory key that is not an Ed25519 private key", async () => {
    const svc = createClient({
      env: {},
      baseUrl: t.daemon.url,
      identity: { handle: "some-agent", privateKey: "nope" },
    });
    await expect(svc.headers("openai")).rejects.toThrow(/neither PKCS#8 PEM nor JWK/);
  });
});

describe("a daemon that is not there", () => {
  const quickly = async (call: () => Promise<unknown>) => {
    const started = performance.now();
    const error = await call().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DaemonUnavailableError);
    expect((error as SvcError).exitCode).toBe(9);
    expect(performance.now() - started).toBeLessThan(2000);
  };

  it("fails every call with DaemonUnavailableError within 2 s, and starts none", async () => {
    const svc = client({ baseUrl: `http://127.0.0.1:${await freePort()}` });
    await quickly(() => svc.headers("openai"));
    await quickly(() => svc.fetch("https://api.openai.com/echo"));
    await quickly(() => svc.connections.list());
    await quickly(() => svc.providers.get("openai"));
  });

  it("fails the same way when the daemon stops while the client is in use", async () => {
    const own = await startTestDaemon();
    try {
      updateClientConfig(own.layout.clientConfig, { active_identity: own.identity.handle });
      const svc = createClient({ env: { SVC_HOME: own.layout.home, SVC_BASE_URL: own.daemon.url } });
      expect(await svc.connections.list()).toEqual([]);
      await own.close();
      await quickly(() => svc.connections.list());
      await quickly(() => svc.headers("openai"));
    } finally {
      await own.stop();
    }
  });
});
