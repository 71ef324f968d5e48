/**
 * `svc run` end to end, the credential side: real clients (curl, python3, Node) in the child, the
 * real CLI and daemon, and a local HTTPS upstream reached under real API host names through
 * SVC_PROXY_CONNECT_TO. What arrives upstream, what the child sees, and what the audit log keeps.
 */
import { randomBytes, X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import { activeIdentity, clientFor } from "../../src/client/session.ts";
import { homeLayout } from "../../src/core/paths.ts";
import { canaryChecks } from "../support/canaries.ts";
import { SvcSandbox } from "../support/cli.ts";
import { type SeenRequest, startUpstream, type Upstream } from "../support/upstream.ts";

const PLACEHOLDER = "svc-proxy-managed";
const NODE = process.execPath;
const HOSTS = [
  "api.openai.com",
  "api.anthropic.com",
  "api.groq.com",
  "api.github.com",
  "github.com",
  "example.com",
  // Never resolves (RFC 6761): reachable only through the proxy.
  "upstream.invalid",
];

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
/** The canary: the default OpenAI key, which the parent also exports as OPENAI_API_KEY. */
const CANARY = `sk-canary-${hex(16)}`;
const WORK_KEY = `sk-work-${hex(16)}`;
const ANTHROPIC_KEY = `sk-ant-canary-${hex(16)}`;
const GITHUB_KEY = `ghp_${hex(18)}`;
const GITHUB_WEB_KEY = `ghweb_${hex(12)}`;
const SECRETS = [CANARY, WORK_KEY, ANTHROPIC_KEY, GITHUB_KEY, GITHUB_WEB_KEY];

/** A custom provider claiming github.com, whose OAuth endpoints belong to the bundled `github`. */
const GITHUB_WEB = {
  name: "github-web-e2e",
  display_name: "GitHub web (e2e)",
  description: "A provider claiming github.com, for the OAuth endpoint test.",
  auth_type: "api_key",
  flow: "api_key",
  api_url: "github.com",
  api_key: { key_pattern: "^ghweb_[a-f0-9]+$", key_pattern_hint: "starts with ghweb_" },
  env: ["GITHUB_WEB_E2E_KEY"],
  docs_url: "https://docs.github.com",
};

const { expectNoSecret, expectOk } = canaryChecks(SECRETS);

describe("svc run: injection, placeholders, scrubbing, tunnelling, audit", () => {
  let upstream: Upstream;
  let sandbox: SvcSandbox;
  let svcCa: X509Certificate;
  let upstreamCa: X509Certificate;

  /** `svc run [flags] -- command...` with the parent exporting the canary (and a stray ALL_PROXY). */
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    sandbox.run(["run", ...args], {
      env: { OPENAI_API_KEY: CANARY, ALL_PROXY: "socks5://127.0.0.1:9", ...env },
    });
  /** The upstream's record of the one request tagged `t=<tag>`. */
  const seenWith = (tag: string): SeenRequest[] =>
    upstream.seen.filter((request) => request.url.includes(`t=${tag}`));

  beforeAll(async () => {
    upstream = await startUpstream();
    sandbox = await SvcSandbox.create({
      NODE_EXTRA_CA_CERTS: upstream.caPath,
      SVC_PROXY_CONNECT_TO: upstream.connectTo(HOSTS),
    });
    const logins: Array<[string[], string]> = [
      [["login", "openai"], CANARY],
      [["login", "anthropic"], ANTHROPIC_KEY],
      [["login", "github-token"], GITHUB_KEY],
    ];
    for (const [args, key] of logins) {
      const login = await sandbox.run(args, { input: `${key}\n` });
      expect(login.code, login.stderr).toBe(0);
    }
    // A second OpenAI connection, not the default.
    const work = await sandbox.run(["login", "openai", "--connection", "work"], { input: `${WORK_KEY}\n` });
    expect(work.code, work.stderr).toBe(0);
    const printed = await sandbox.run(["run", "--print-ca"]);
    expect(printed.code).toBe(0);
    svcCa = new X509Certificate(readFileSync(printed.stdout.trim()));
    upstreamCa = new X509Certificate(readFileSync(upstream.caPath));
  });
  afterAll(async () => {
    await sandbox?.destroy();
    await upstream?.close();
  });

  const CLIENTS: Array<{ name: string; command: (url: string) => string[] }> = [
    { name: "curl", command: (url) => ["curl", "-sS", "--fail", url] },
    {
      name: "python3 urllib",
      command: (url) => [
        "python3",
        "-c",
        "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
        url,
      ],
    },
    {
      name: "node fetch",
      command: (url) => [
        NODE,
        "--input-type=module",
        "-e",
        "const r = await fetch(process.argv[1]); if (!r.ok) process.exit(9); console.log(await r.text());",
        url,
      ],
    },
    {
      name: "node https.get",
      command: (url) => [
        NODE,
        "-e",
        `require("node:https").get(process.argv[1], (r) => {
           let body = ""; r.setEncoding("utf8");
           r.on("data", (d) => { body += d; });
           r.on("end", () => { console.log(body); process.exitCode = r.statusCode === 200 ? 0 : 9; });
         }).on("error", (e) => { console.error(e.message); process.exitCode = 8; });`,
        url,
      ],
    },
  ];

  it.each(CLIENTS)(
    "$name: the upstream gets Bearer <key>, the child an echo with the placeholder",
    async ({ command }) => {
      const tag = hex(4);
      const result = expectOk(await run(["--", ...command(`https://api.openai.com/echo?t=${tag}`)]));
      const echoed = JSON.parse(result.stdout.trim()) as { headers: Record<string, string> };
      expect(echoed.headers.authorization).toBe(PLACEHOLDER);
      const [seen, ...more] = seenWith(tag);
      expect(more).toEqual([]);
      expect(seen).toMatchObject({ method: "GET", host: "api.openai.com", path: "/echo" });
      expect(seen!.headers.authorization).toBe(`Bearer ${CANARY}`);
    },
  );

  it("Node 24's https.get and fetch use the proxy only with NODE_USE_ENV_PROXY=1 (which svc sets)", async () => {
    const probe = `const url = "https://upstream.invalid/echo";
      const viaGet = await new Promise((resolve) => require("node:https").get(url, (r) => { r.resume(); resolve(r.statusCode); }).on("error", (e) => resolve(e.code)));
      const viaFetch = await fetch(url).then((r) => r.status, (e) => e.cause?.code);
      console.log(process.env.NODE_USE_ENV_PROXY ?? "unset", viaGet, viaFetch);`;
    const wrapped = `(async () => { ${probe} })()`;
    const result = expectOk(
      await run(["--", "sh", "-c", `"$0" -e "$1" && env -u NODE_USE_ENV_PROXY "$0" -e "$1"`, NODE, wrapped]),
    );
    expect(result.stdout.trim().split("\n")).toEqual(["1 200 200", "unset ENOTFOUND ENOTFOUND"]);
  });

  it("Anthropic gets its raw key in x-api-key, and no Authorization", async () => {
    const tag = hex(4);
    const result = expectOk(await run(["--", "curl", "-sS", `https://api.anthropic.com/echo?t=${tag}`]));
    expect(JSON.parse(result.stdout).headers["x-api-key"]).toBe(PLACEHOLDER);
    const [seen] = seenWith(tag);
    expect(seen!.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(seen!.headers.authorization).toBeUndefined();
  });

  it("the child's environment holds placeholders and the proxy settings, never a key", async () => {
    const result = expectOk(
      await run(["--", NODE, "-e", "console.log(JSON.stringify(process.env))"], {
        ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        GITHUB_TOKEN: GITHUB_KEY,
      }),
    );
    const env = JSON.parse(result.stdout) as Record<string, string>;
    expect(env).toMatchObject({
      OPENAI_API_KEY: PLACEHOLDER,
      ANTHROPIC_API_KEY: PLACEHOLDER,
      GITHUB_TOKEN: PLACEHOLDER,
      GH_TOKEN: PLACEHOLDER,
      NODE_USE_ENV_PROXY: "1",
    });
    // The proxy's credential travels in the URL: only this child can use the proxy.
    const proxyUrl = env.HTTPS_PROXY!;
    expect(proxyUrl).toMatch(/^http:\/\/svc:[A-Za-z0-9_-]{43}@127\.0\.0\.1:\d+$/);
    for (const name of ["https_proxy", "HTTP_PROXY", "http_proxy"]) expect(env[name]).toBe(proxyUrl);
    for (const name of ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"])
      expect(env[name]).toBe(join(sandbox.home, "proxy", "ca-bundle.pem"));
    expect(env.ALL_PROXY).toBeUndefined();
    // Unconnected providers' variables are left alone (none was set).
    expect(env.GROQ_API_KEY).toBeUndefined();
    expectNoSecret(JSON.stringify(env));
  });

  it("an echoed secret is scrubbed from the body, a response header and a gzip body", async () => {
    const tag = hex(4);
    const script = [
      `curl -sS -D - -o /dev/null "https://api.openai.com/echo-header?t=${tag}"`,
      `curl -sS --compressed -D - "https://api.openai.com/echo-gzip?t=${tag}"`,
      `curl -sS "https://api.openai.com/echo-gzip?t=${tag}"`,
    ].join(" && echo && ");
    const result = expectOk(await run(["--", "sh", "-c", script]));
    expect(result.stdout).toMatch(new RegExp(`^x-echo-authorization: ${PLACEHOLDER}\\r?$`, "mi"));
    // Decoded by the proxy: the child gets identity bytes, with or without Accept-Encoding.
    expect(result.stdout).not.toMatch(/^content-encoding:/im);
    const bodies = result.stdout.match(/\{"method".*\}/g) ?? [];
    expect(bodies).toHaveLength(2);
    for (const body of bodies) expect(JSON.parse(body).headers.authorization).toBe(PLACEHOLDER);
    const seen = seenWith(tag);
    expect(seen.map((request) => request.path)).toEqual(["/echo-header", "/echo-gzip", "/echo-gzip"]);
    for (const request of seen) expect(request.headers.authorization).toBe(`Bearer ${CANARY}`);
  });

  it("a small scrubbed answer, announced or chunked, gets an exact Content-Length; a HEAD answer has no body; a truncated one is a 502", async () => {
    const tag = hex(4);
    const script = [
      `curl -sS -D - "https://api.openai.com/echo?t=${tag}"`,
      `curl -sS -D - "https://api.openai.com/status/200?t=${tag}"`,
      `curl -sS -I "https://api.openai.com/echo?t=${tag}"`,
      `curl -sS -D - "https://api.openai.com/truncated?t=${tag}"`,
    ].join(" && echo '<next>' && ");
    const result = expectOk(await run(["--", "sh", "-c", script]));
    const [get, chunked, head, truncated] = result.stdout.split("<next>\n");
    // curl -D prints the proxy's CONNECT answer first; the body comes after the last blank line.
    const body = get!.split(/\r?\n\r?\n/).at(-1)!;
    expect(JSON.parse(body).headers.authorization).toBe(PLACEHOLDER);
    // The placeholder is longer than the key: the length is the scrubbed body's, and not chunked.
    expect(get).toMatch(new RegExp(`^content-length: ${Buffer.byteLength(body)}\\r?$`, "mi"));
    expect(get).not.toMatch(/^transfer-encoding:/im);
    // The upstream sent an empty chunked body; it had arrived whole with the headers.
    expect(chunked).toMatch(/^content-length: 0\r?$/im);
    expect(chunked).not.toMatch(/^transfer-encoding:/im);
    expect(head).toMatch(/^HTTP\/1\.1 200 OK/m);
    expect(head).not.toMatch(/^content-length:/im);
    // The upstream promised 100 bytes and sent 10: the child gets svc's error, not a cut body.
    expect(truncated).toMatch(/^HTTP\/1\.1 502/m);
    expect(truncated).toMatch(/svc_proxy/);
    expect(truncated).not.toContain("0123456789");
    expect(seenWith(tag).map((request) => request.method)).toEqual(["GET", "GET", "HEAD", "GET"]);
  });

  it("an unmatched host is tunnelled: the child sees the upstream's own certificate and no credential", async () => {
    const tag = hex(4);
    // curl prints the chain it was shown; python reports the leaf of a CONNECT it makes itself.
    const curl = expectOk(
      await run([
        "--",
        "curl",
        "-sS",
        "-o",
        "/dev/null",
        "-w",
        "%{certs}",
        `https://example.com/echo?t=${tag}`,
      ]),
    );
    const python = expectOk(
      await run([
        "--",
        "python3",
        "-c",
        `
import base64, http.client, os, ssl, sys, urllib.parse
proxy = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])
credential = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
for host in sys.argv[1:]:
    connection = http.client.HTTPSConnection(proxy.hostname, proxy.port, context=ssl.create_default_context())
    connection.set_tunnel(host, 443, headers={"Proxy-Authorization": f"Basic {credential}"})
    connection.request("GET", "/echo?t=${tag}")
    response = connection.getresponse()
    response.read()
    print(host, response.status, base64.b64encode(connection.sock.getpeercert(binary_form=True)).decode())
`,
        "example.com",
        "api.openai.com",
      ]),
    );
    const curlLeaf = new X509Certificate(
      curl.stdout.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/)![0],
    );
    const leaves = Object.fromEntries(
      python.stdout
        .trim()
        .split("\n")
        .map((line) => line.split(" "))
        .map(([host, status, der]) => {
          expect(status).toBe("200");
          return [host!, new X509Certificate(Buffer.from(der!, "base64"))];
        }),
    );
    for (const leaf of [curlLeaf, leaves["example.com"]!]) {
      expect(leaf.subjectAltName).toBe("DNS:example.com");
      expect(leaf.checkIssued(upstreamCa)).toBe(true);
      expect(leaf.checkIssued(svcCa)).toBe(false);
    }
    // An intercepted host, for contrast: the svc CA's leaf.
    expect(leaves["api.openai.com"]!.checkIssued(svcCa)).toBe(true);

    const tunnelled = seenWith(tag).filter((request) => request.host === "example.com");
    expect(tunnelled).toHaveLength(2);
    for (const request of tunnelled) {
      expect(request.headers.authorization).toBeUndefined();
      expect(request.headers["x-api-key"]).toBeUndefined();
    }
  });

  it("a provider's OAuth endpoints never get a credential, even on an intercepted host", async () => {
    const tag = hex(4);
    const oauth = `https://github.com/login/oauth/access_token?t=${tag}`;
    const post = (url: string) => `curl -sS -o /dev/null -X POST -d code=x "${url}"`;
    // github.com belongs to no connected provider: tunnelled.
    expectOk(await run(["--", "sh", "-c", post(oauth)]));
    // Now a connected provider claims github.com, so it is intercepted; the bundled github
    // provider's token endpoint on it still gets nothing, while its other paths do.
    const file = join(sandbox.home, "..", "github-web.json");
    writeFileSync(file, JSON.stringify(GITHUB_WEB));
    const registered = await sandbox.run(["provider", "register", file]);
    expect(registered.code, registered.stderr).toBe(0);
    const login = await sandbox.run(["login", GITHUB_WEB.name], { input: `${GITHUB_WEB_KEY}\n` });
    expect(login.code, login.stderr).toBe(0);
    expectOk(
      await run([
        "--",
        "sh",
        "-c",
        `${post(oauth)} && ${post(`https://github.com/login/oauth/access_token/?t=${tag}`)} && ${post(`https://github.com/echo?t=${tag}`)} && curl -sS -o /dev/null "https://api.github.com/echo?t=${tag}"`,
      ]),
    );
    const seen = seenWith(tag);
    expect(seen.map((request) => `${request.host}${request.path}`)).toEqual([
      "github.com/login/oauth/access_token",
      "github.com/login/oauth/access_token",
      "github.com/login/oauth/access_token/",
      "github.com/echo",
      "api.github.com/echo",
    ]);
    for (const request of seen.slice(0, 3)) expect(request.headers.authorization).toBeUndefined();
    expect(seen[3]!.headers.authorization).toBe(`Bearer ${GITHUB_WEB_KEY}`);
    expect(seen[4]!.headers.authorization).toBe(`Bearer ${GITHUB_KEY}`);
  });

  it("--deny-unmatched answers 403 naming `svc login` for a provider without a connection", async () => {
    const tag = hex(4);
    const url = `https://api.groq.com/openai/v1/models?t=${tag}`;
    const curl = ["curl", "-sS", "-w", "\\n%{http_code}", url];
    const denied = expectOk(await run(["--deny-unmatched", "--", ...curl]));
    const lines = denied.stdout.trim().split("\n");
    expect(lines.at(-1)).toBe("403");
    const message = expect.stringContaining("`svc login groq`");
    expect(JSON.parse(lines[0]!)).toEqual({
      error: { type: "svc_proxy", code: "ConnectionNotFoundError", message },
      message,
    });
    expect(seenWith(tag)).toEqual([]);
    // Without the flag the request goes upstream untouched.
    const forwarded = expectOk(await run(["--", ...curl]));
    expect(forwarded.stdout.trim().split("\n").at(-1)).toBe("404");
    const [seen, ...more] = seenWith(tag);
    expect(more).toEqual([]);
    expect(seen).toMatchObject({ host: "api.groq.com", path: "/openai/v1/models" });
    expect(seen!.headers.authorization).toBeUndefined();
  });

  it("--connection openai:work picks the non-default connection", async () => {
    const tag = hex(4);
    expectOk(
      await run(["--connection", "openai:work", "--", "curl", "-sS", `https://api.openai.com/echo?t=${tag}`]),
    );
    expect(seenWith(tag).map((request) => request.headers.authorization)).toEqual([`Bearer ${WORK_KEY}`]);

    const malformed = await run(["--connection", "openai", "--", "true"]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("--connection takes <provider>:<name>");
  });

  it("--connection is checked before the child starts: an unknown provider exits 4, an unknown connection 3, with the names that exist", async () => {
    const child = ["--", "sh", "-c", "echo child-started"];
    const provider = await run(["--connection", "opnai:default", ...child]);
    expect(provider.code).toBe(4);
    expect(provider.stderr).toContain('svc knows no provider "opnai"; did you mean openai?');
    const connection = await run(["--connection", "openai:nope", ...child]);
    expect(connection.code).toBe(3);
    expect(connection.stderr).toContain('openai has no connection "nope"; its connections: default, work');
    const none = await run(["--connection", "groq:default", ...child]);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain("groq has no connection yet: run `svc login groq`");
    const json = await run(["--json", "--connection", "openai:nope", ...child]);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: "ConnectionNotFoundError" });
    for (const result of [provider, connection, none, json])
      expect(result.stdout).not.toContain("child-started");
  });

  it("a request for a provider without a connection is reported once on stderr, however many are made", async () => {
    const tag = hex(4);
    const url = `https://api.groq.com/openai/v1/models?t=${tag}`;
    const result = expectOk(
      await run(["--", "sh", "-c", `curl -sS -o /dev/null "${url}" && curl -sS -o /dev/null "${url}"`]),
    );
    expect(seenWith(tag)).toHaveLength(2);
    const notices = result.stderr.match(/groq has no connection/g) ?? [];
    expect(notices).toHaveLength(1);
    expect(result.stderr).toContain("svc login groq");
  });

  it("audit events reach the daemon with metadata only: never the query string or headers", async () => {
    const tag = hex(4);
    const querySecret = `qs-${hex(8)}`;
    const headerSecret = `hdr-${hex(8)}`;
    const result = expectOk(
      await sandbox.run(
        [
          "--verbose",
          "run",
          "--connection",
          "openai:work",
          "--",
          "sh",
          "-c",
          `curl -sS -o /dev/null -H "x-custom: ${headerSecret}" "https://api.openai.com/v1/chat/completions?t=${tag}&api_key=${querySecret}" && curl -sS -o /dev/null -X POST -d x "https://api.openai.com/status/418?t=${tag}" && curl -sS -o /dev/null "https://api.anthropic.com/status/204?t=${tag}"`,
        ],
        { env: { OPENAI_API_KEY: CANARY } },
      ),
    );
    expect(result.stderr).not.toContain(querySecret);
    // --verbose traces the run's daemon requests, but not a resolve per proxied request.
    expect(result.stderr).toContain("path=/api/proxy/routes");
    expect(result.stderr).not.toContain("/api/credentials/resolve");
    expectOk(
      await run([
        "--deny-unmatched",
        "--",
        "curl",
        "-sS",
        "-o",
        "/dev/null",
        `https://api.groq.com/v1/x?t=${tag}`,
      ]),
    );

    const layout = homeLayout(sandbox.home);
    const client = clientFor(layout, sandbox.env, activeIdentity(layout));
    const page = await client.get<AuditPageRecord>("/api/audit/events?event=proxy.request&limit=500");
    const text = JSON.stringify(page);
    expect(text).not.toContain(querySecret);
    expect(text).not.toContain(headerSecret);
    expect(text).not.toContain(tag);
    expect(text).not.toMatch(/authorization|x-api-key|svc-proxy-managed/i);
    expectNoSecret(text);

    const find = (host: string, path: string) =>
      page.events.find((event) => event.detail?.host === host && event.detail?.path === path);
    expect(find("api.openai.com", "/v1/chat/completions")).toMatchObject({
      event: "proxy.request",
      source: "external",
      status: "failure",
      provider: "openai",
      connection: "work",
      detail: {
        method: "GET",
        host: "api.openai.com",
        path: "/v1/chat/completions",
        status_code: 404,
        duration_ms: expect.any(Number),
        decision: "injected",
      },
    });
    expect(find("api.openai.com", "/status/418")).toMatchObject({
      provider: "openai",
      connection: "work",
      detail: { method: "POST", status_code: 418 },
    });
    expect(find("api.anthropic.com", "/status/204")).toMatchObject({
      status: "success",
      provider: "anthropic",
      connection: "default",
      detail: { method: "GET", status_code: 204 },
    });
    expect(find("api.groq.com", "/v1/x")).toMatchObject({
      status: "failure",
      provider: "groq",
      connection: null,
      detail: { status_code: 403, decision: "denied" },
    });
    // Tunnelled requests are invisible to the proxy: no event for example.com.
    expect(page.events.some((event) => event.detail?.host === "example.com")).toBe(false);
  });

  it("no key appears in any file under SVC_HOME (the vault holds them encrypted)", async () => {
    const files = sandbox.files();
    expect(files.some((file) => file.path.endsWith("svc.db"))).toBe(true);
    expect(files.some((file) => file.path.endsWith("ca-bundle.pem"))).toBe(true);
    for (const file of files) {
      const content = file.content.toString("latin1");
      for (const secret of SECRETS) {
        expect(content.includes(secret), `${secret} in ${file.path}`).toBe(false);
        expect(content.includes(Buffer.from(secret).toString("base64")), `${secret} in ${file.path}`).toBe(
          false,
        );
      }
    }
  });
});
