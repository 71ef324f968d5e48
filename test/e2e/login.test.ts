import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection, LoggedOut, Revoked } from "../../src/api/connections.ts";
import { runInProcess, SvcSandbox, submitApiKeyPage } from "../support/cli.ts";

const openaiKey = () => `sk-test-${randomBytes(12).toString("hex")}`;
const last4 = (key: string) => `••••${key.slice(-4)}`;
const LINK = /(http:\/\/127\.0\.0\.1:\d+\/api\/auth\/sessions\/\S+\/input\?token=\S+)/;

describe("svc login, logout, connections and provider list", () => {
  let sandbox: SvcSandbox;
  const defaultKey = openaiKey();

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    expect((await sandbox.run(["whoami"])).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("stores a key piped on stdin; connections and provider list show it, redacted", async () => {
    const login = await sandbox.run(["login", "openai"], { input: `${defaultKey}\n` });
    expect(login.stderr).toContain('✓ Connected openai (connection "default")');
    expect(login.code).toBe(0);

    const table = await sandbox.run(["connections"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^PROVIDER\s+CONNECTION\s+DEFAULT\s+STATUS\s+CREDENTIAL\s+UPDATED$/m);
    expect(table.stdout).toMatch(
      new RegExp(`^openai\\s+default\\s+\\*\\s+active\\s+${last4(defaultKey)}\\s+\\S+Z$`, "m"),
    );
    expect(table.stdout).not.toContain(defaultKey);

    const listed = await sandbox.json<Connection[]>(["connections", "list", "--provider", "openai"]);
    expect(listed).toEqual([
      expect.objectContaining({
        provider: "openai",
        connection: "default",
        is_default: true,
        status: "active",
        credential: { type: "api_key", redacted: last4(defaultKey) },
      }),
    ]);

    const providers = await sandbox.run(["provider", "list"]);
    expect(providers.code).toBe(0);
    const lines = providers.stdout.split("\n");
    expect(lines[0]).toMatch(/^Providers: \d+ total, 1 connected$/);
    expect(lines[1]).toMatch(/^NAME\s+AUTH\s+FLOW\s+SOURCE\s+CONNECTIONS$/);
    expect(providers.stdout).toMatch(/^openai\s+api_key\s+api_key\s+bundled\s+default\*$/m);
    expect(providers.stdout).toMatch(/^github\s+oauth2\s+\S+\s+bundled\s+-$/m);

    const quiet = await sandbox.run(["provider", "list", "--quiet"]);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).not.toContain("Providers:");
    expect(quiet.stdout).toMatch(/^openai\s+api_key\s+api_key\s+bundled\s+default\*$/m);
    expect(quiet.stdout.split("\n").length).toBe(lines.length - 1);

    const json = await sandbox.json<{ bundled: Array<Record<string, unknown>>; custom: unknown[] }>([
      "provider",
      "list",
    ]);
    expect(json.custom).toEqual([]);
    expect(json.bundled.find((item) => item.name === "openai")).toEqual({
      name: "openai",
      display_name: "OpenAI",
      auth_type: "api_key",
      flow: "api_key",
      source: "bundled",
      connections: ["default"],
      default_connection: "default",
    });
    expect(json.bundled.find((item) => item.name === "github")).toMatchObject({
      connections: [],
      default_connection: null,
    });
  });

  it("prints the final auth session with --json", async () => {
    const result = await sandbox.run(["login", "openai", "--connection", "json-out", "--json"], {
      input: `${openaiKey()}\n`,
    });
    expect(result.code).toBe(0);
    const session = JSON.parse(result.stdout) as AuthSession;
    expect(session).toMatchObject({
      provider: "openai",
      connection: "json-out",
      flow: "api_key",
      status: "completed",
      session_id: expect.any(String),
    });
    expect(result.stderr).toBe("");
  });

  it("exits 6 on an existing connection without --force; --force replaces it", async () => {
    const again = await sandbox.run(["login", "openai"], { input: `${openaiKey()}\n` });
    expect(again.code).toBe(6);
    expect(again.stderr).toMatch(/already has a connection "default".*--force/);
    const json = await sandbox.run(["login", "openai", "--json"], { input: `${openaiKey()}\n` });
    expect(json.code).toBe(6);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: "ConnectionAlreadyExistsError" });

    const replacement = openaiKey();
    const forced = await sandbox.run(["login", "openai", "--connection", "json-out", "--force"], {
      input: `${replacement}\n`,
    });
    expect(forced.code).toBe(0);
    const inspected = await sandbox.json<Connection>([
      "connections",
      "inspect",
      "openai",
      "--connection",
      "json-out",
    ]);
    expect(inspected.credential).toEqual({ type: "api_key", redacted: last4(replacement) });
  });

  it("refuses a key that does not match the provider's key_pattern (exit 2, with the hint), and empty input", async () => {
    const bad = await sandbox.run(["login", "openai", "--connection", "bad"], {
      input: "not-an-openai-key\n",
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("starts with sk-");
    const json = await sandbox.run(["login", "openai", "--connection", "bad", "--json"], { input: "nope\n" });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: "InvalidInputError",
      message: expect.stringContaining("starts with sk-"),
    });

    const empty = await sandbox.run(["login", "openai", "--connection", "bad"], { input: "" });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("no API key on standard input");
    const blank = await sandbox.run(["login", "openai", "--connection", "bad"], { input: "\n" });
    expect(blank.code).toBe(2);

    expect((await sandbox.run(["connections", "inspect", "openai", "--connection", "bad"])).code).toBe(3);
  });

  it("reads only the first line of stdin, without its line ending", async () => {
    const key = openaiKey();
    const result = await sandbox.run(["login", "openai", "--connection", "first-line"], {
      input: `${key}\r\nsk-second-line-is-ignored\n`,
    });
    expect(result.code).toBe(0);
    const revealed = await sandbox.json<Connection>([
      "connections",
      "inspect",
      "openai",
      "--connection",
      "first-line",
      "--reveal",
    ]);
    expect(revealed.credential).toMatchObject({ type: "api_key", api_key: key });
  });

  it("exits 4 for an unknown provider; 2 for a flow the provider lacks and bad arguments; never takes a key as an argument", async () => {
    const unknown = await sandbox.run(["login", "no-such-provider", "--json"], { input: `${openaiKey()}\n` });
    expect(unknown.code).toBe(4);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ error: "ProviderNotFoundError" });

    const noRegistration = await sandbox.run(["login", "github", "--flow", "dcr_pkce", "--json"]);
    expect(noRegistration.code).toBe(2);
    expect(JSON.parse(noRegistration.stdout)).toMatchObject({
      error: "InvalidInputError",
      message: expect.stringMatching(/supports device_code$/),
    });

    expect((await sandbox.run(["login", "openai", "--flow", "magic"])).code).toBe(2);
    expect(
      (await sandbox.run(["login", "openai", "--flow", "pkce"], { input: `${openaiKey()}\n` })).code,
    ).toBe(2);
    expect((await sandbox.run(["login", "openai", "--connection", "a b"])).code).toBe(2);
    expect((await sandbox.run(["login", "openai", "--scopes", ","])).code).toBe(2);

    const secret = openaiKey();
    const asArgument = await sandbox.run(["login", "openai", secret]);
    expect(asArgument.code).toBe(2);
    expect(asArgument.stderr).toMatch(/too many arguments/);
    expect(asArgument.stdout + asArgument.stderr).not.toContain(secret);
    for (const option of ["--api-key", "--key", "--secret", "--token"]) {
      expect((await sandbox.run(["login", "openai", option, secret])).code).toBe(2);
    }
  });

  it("--browser prints the link, waits, and completes when the page's form is posted", async () => {
    const cli = sandbox.start(["login", "openai", "--connection", "browser", "--browser", "--json"]);
    const [, url] = await cli.waitFor("stderr", LINK);

    // A key in the wrong format: the page shows the form again with the hint; the CLI keeps waiting.
    const refused = await submitApiKeyPage(url!, "wrong-format");
    expect(refused.status).toBe(400);
    expect(refused.html).toContain("starts with sk-");
    const settled = await Promise.race([
      cli.result,
      new Promise((resolve) => setTimeout(resolve, 300, "waiting")),
    ]);
    expect(settled).toBe("waiting");

    const key = openaiKey();
    const accepted = await submitApiKeyPage(url!, key);
    expect(accepted.status).toBe(200);
    expect(accepted.html).toContain("connected");

    const result = await cli.result;
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ connection: "browser", status: "completed" });
    expect(result.stdout + result.stderr).not.toContain(key);
    const stored = await sandbox.json<Connection>([
      "connections",
      "inspect",
      "openai",
      "--connection",
      "browser",
    ]);
    expect(stored.credential).toEqual({ type: "api_key", redacted: last4(key) });
  });

  it.runIf(process.platform === "linux")(
    "--browser opens the link with xdg-open, and still works when there is no opener",
    async () => {
      const bin = mkdtempSync(join(tmpdir(), "svc-opener-"));
      try {
        const record = join(bin, "opened.txt");
        writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s' "$1" > ${JSON.stringify(record)}\n`);
        chmodSync(join(bin, "xdg-open"), 0o755);
        const cli = sandbox.start(["login", "openai", "--connection", "opened", "--browser"], {
          env: { SVC_NO_BROWSER: "", PATH: bin },
        });
        const [, url] = await cli.waitFor("stderr", LINK);
        await expect.poll(() => readFileSync(record, "utf8"), { timeout: 5000 }).toBe(url);
        await submitApiKeyPage(url!, openaiKey());
        const result = await cli.result;
        expect(result.code).toBe(0);
        expect(result.stderr).toContain("Waiting for the browser");
        expect(result.stderr).toContain('✓ Connected openai (connection "opened")');

        const empty = mkdtempSync(join(tmpdir(), "svc-no-opener-"));
        const headless = sandbox.start(["login", "openai", "--connection", "headless", "--browser"], {
          env: { SVC_NO_BROWSER: "", PATH: empty },
        });
        const [, link] = await headless.waitFor("stderr", LINK);
        await submitApiKeyPage(link!, openaiKey());
        expect((await headless.result).code).toBe(0);
        rmSync(empty, { recursive: true, force: true });
      } finally {
        rmSync(bin, { recursive: true, force: true });
      }
    },
  );

  it("set-default moves the default; logging out the default promotes the oldest remaining", async () => {
    for (const name of ["alpha", "beta", "gamma"]) {
      const result = await sandbox.run(["login", "mistral", "--connection", name], {
        input: `mistral-${name}-key\n`,
      });
      expect(result.code).toBe(0);
    }
    const defaults = async () =>
      (await sandbox.json<Connection[]>(["connections", "--provider", "mistral"]))
        .filter((connection) => connection.is_default)
        .map((connection) => connection.connection);
    expect(await defaults()).toEqual(["alpha"]);

    const moved = await sandbox.run(["connections", "set-default", "mistral", "gamma"]);
    expect(moved.code).toBe(0);
    expect(moved.stderr).toContain('"gamma" is now the default mistral connection');
    expect(await defaults()).toEqual(["gamma"]);
    expect((await sandbox.run(["provider", "list"])).stdout).toMatch(/^mistral\s.*alpha, beta, gamma\*$/m);

    const out = await sandbox.run(["logout", "mistral", "--connection", "gamma"]);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain('Logged out mistral (connection "gamma")');
    expect(out.stderr).toContain('Default mistral connection: "alpha"');
    expect(await defaults()).toEqual(["alpha"]);

    const json = await sandbox.json<Connection>(["connections", "set-default", "mistral", "beta"]);
    expect(json).toMatchObject({ connection: "beta", is_default: true });
    const loggedOut = await sandbox.json<LoggedOut>(["logout", "mistral", "--connection", "beta"]);
    expect(loggedOut).toEqual({
      provider: "mistral",
      connection: "beta",
      removed: true,
      default_connection: "alpha",
    });
    const last = await sandbox.json<LoggedOut>(["logout", "mistral", "--connection", "alpha"]);
    expect(last.default_connection).toBeNull();
    expect(await defaults()).toEqual([]);
  });

  it("logout and set-default exit 3 for an absent connection and 4 for an unknown provider", async () => {
    const absent = await sandbox.run(["logout", "openai", "--connection", "absent", "--json"]);
    expect(absent.code).toBe(3);
    expect(JSON.parse(absent.stdout)).toMatchObject({ error: "ConnectionNotFoundError" });
    expect((await sandbox.run(["logout", "no-such-provider"])).code).toBe(4);
    expect((await sandbox.run(["connections", "set-default", "openai", "absent"])).code).toBe(3);
    expect((await sandbox.run(["connections", "set-default", "no-such-provider", "default"])).code).toBe(4);
    expect((await sandbox.run(["connections", "set-default", "openai"])).code).toBe(2);
  });

  it("connections inspect shows the default connection redacted, --reveal prints the secret with a warning", async () => {
    const inspected = await sandbox.run(["connections", "inspect", "openai"]);
    expect(inspected.code).toBe(0);
    const record = JSON.parse(inspected.stdout) as Connection;
    expect(record).toMatchObject({ provider: "openai", connection: "default", is_default: true });
    expect(record.credential).toEqual({ type: "api_key", redacted: last4(defaultKey) });
    expect(inspected.stdout).not.toContain(defaultKey);

    const revealed = await sandbox.run(["connections", "inspect", "openai", "--reveal"]);
    expect(revealed.code).toBe(0);
    expect(JSON.parse(revealed.stdout).credential).toMatchObject({ api_key: defaultKey });
    expect(revealed.stderr).toMatch(/warning: .*secret/);

    expect((await sandbox.run(["connections", "inspect", "openai", "--connection", "absent"])).code).toBe(3);
    expect((await sandbox.run(["connections", "inspect", "groq"])).code).toBe(3);
    expect((await sandbox.run(["connections", "inspect", "no-such-provider"])).code).toBe(4);
    expect((await sandbox.run(["connections", "list", "--provider", "no-such-provider"])).code).toBe(4);
  });

  it("provider inspect prints the definition and the connections as JSON (exit 4 when unknown)", async () => {
    const result = await sandbox.run(["provider", "inspect", "openai"]);
    expect(result.code).toBe(0);
    const inspected = JSON.parse(result.stdout) as {
      provider: Record<string, unknown>;
      connections: Connection[];
    };
    expect(inspected.provider).toMatchObject({
      name: "openai",
      auth_type: "api_key",
      source: "bundled",
      api_key: expect.objectContaining({ header_name: "Authorization" }),
    });
    expect(inspected.connections.map((connection) => connection.connection)).toContain("default");
    expect(result.stdout).not.toContain(defaultKey);
    const unknown = await sandbox.run(["provider", "inspect", "no-such-provider", "--json"]);
    expect(unknown.code).toBe(4);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ error: "ProviderNotFoundError" });
  });

  it("provider revoke removes every connection of the provider and reports the remote results", async () => {
    for (const name of ["one", "two"]) {
      const key = `gsk_${randomBytes(10).toString("hex")}`;
      expect((await sandbox.run(["login", "groq", "--connection", name], { input: `${key}\n` })).code).toBe(
        0,
      );
    }
    const revoked = await sandbox.run(["provider", "revoke", "groq"]);
    expect(revoked.code).toBe(0);
    expect(revoked.stderr).toContain("Revoked groq: removed 2 connections (one, two)");
    expect(revoked.stdout).toMatch(/^one\s+not_supported\s+/m);
    expect(await sandbox.json<Connection[]>(["connections", "--provider", "groq"])).toEqual([]);
    const again = await sandbox.json<Revoked>(["provider", "revoke", "groq"]);
    expect(again).toMatchObject({ provider: "groq", removed_connections: [], remote: [] });
    expect((await sandbox.run(["provider", "revoke", "no-such-provider"])).code).toBe(4);
  });

  it("lists the new commands in shell completion", async () => {
    for (const shell of ["bash", "zsh", "fish"]) {
      const result = await sandbox.run(["completion", shell]);
      expect(result.code).toBe(0);
      for (const word of ["login", "logout", "provider", "connections", "register", "set-default"])
        expect(result.stdout, `${shell}: ${word}`).toContain(word);
    }
  });
});

describe("svc login and provider register on a terminal (scripted prompts)", () => {
  let sandbox: SvcSandbox;

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    expect((await sandbox.run(["login", "openai"], { input: `${openaiKey()}\n` })).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("asks for the key with a masked prompt, and asks again when its format is refused", async () => {
    const key = openaiKey();
    const result = await runInProcess(sandbox, ["login", "openai", "--connection", "tty"], {
      answers: ["not-a-key", key],
    });
    expect(result.code).toBe(0);
    expect(result.asked).toHaveLength(2);
    expect(result.asked[0]).toContain("OpenAI API key");
    expect(result.stderr).toMatch(/warning: .*starts with sk-/);
    expect(result.stderr).toContain('✓ Connected openai (connection "tty")');
    expect(result.stdout + result.stderr).not.toContain(key);
  });

  it("gives up after three refused keys (exit 2)", async () => {
    const result = await runInProcess(sandbox, ["login", "openai", "--connection", "tty-bad"], {
      answers: ["bad-1", "bad-2", "bad-3"],
    });
    expect(result.code).toBe(2);
    expect(result.asked).toHaveLength(3);
  });

  it("exits 2 (InputCancelledError) when the prompt is cancelled", async () => {
    const result = await runInProcess(sandbox, ["login", "openai", "--connection", "tty-cancel", "--json"], {
      answers: [undefined],
    });
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: "InputCancelledError" });
  });

  it("asks before replacing an existing connection: no → exit 2, yes → replaced", async () => {
    const kept = await runInProcess(sandbox, ["login", "openai"], { answers: [false] });
    expect(kept.code).toBe(2);
    expect(kept.asked[0]).toMatch(/already has a connection "default".*Replace/);
    expect(kept.stderr).toContain("was kept");

    const key = openaiKey();
    const replaced = await runInProcess(sandbox, ["login", "openai"], { answers: [true, key] });
    expect(replaced.code).toBe(0);
    const record = await sandbox.json<Connection>(["connections", "inspect", "openai"]);
    expect(record.credential).toEqual({ type: "api_key", redacted: last4(key) });

    const forced = await runInProcess(sandbox, ["login", "openai", "--force"], { answers: [openaiKey()] });
    expect(forced.code).toBe(0);
    expect(forced.asked).toHaveLength(1);
  });

  it("provider register asks before replacing an existing provider: no → exit 2, yes → replaced", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-provider-"));
    try {
      const file = join(dir, "tty-acme.json");
      writeFileSync(
        file,
        JSON.stringify({
          name: "tty-acme",
          display_name: "TTY Acme",
          description: "A provider registered from a terminal.",
          auth_type: "api_key",
          flow: "api_key",
          api_url: "api.tty-acme.example",
          api_key: {},
          docs_url: "https://docs.tty-acme.example/",
        }),
      );
      expect((await runInProcess(sandbox, ["provider", "register", file])).code).toBe(0);
      const kept = await runInProcess(sandbox, ["provider", "register", file], { answers: [false] });
      expect(kept.code).toBe(2);
      expect(kept.asked[0]).toContain('"tty-acme" already exists');
      const replaced = await runInProcess(sandbox, ["provider", "register", file, "--json"], {
        answers: [true],
      });
      expect(replaced.code).toBe(0);
      expect(JSON.parse(replaced.stdout)).toMatchObject({ created: false, provider: { name: "tty-acme" } });
      // --yes never asks: it fails on an existing name, even on a terminal.
      const yes = await runInProcess(sandbox, ["provider", "register", file, "--yes"]);
      expect(yes.code).toBe(7);
      expect(yes.asked).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a canary API key", () => {
  let sandbox: SvcSandbox;
  const canary = `sk-canary-${randomBytes(16).toString("hex")}`;

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  const assertNoCanaryInFiles = () => {
    const files = sandbox.files();
    expect(files.some((file) => file.path.includes(join("server", "logs")))).toBe(true);
    expect(files.some((file) => file.path.includes(join("client", "logs")))).toBe(true);
    for (const file of files) {
      for (const encoding of ["utf8", "latin1", "utf16le"] as const) {
        expect(file.content.toString(encoding).includes(canary), `${file.path} holds the canary`).toBe(false);
      }
      expect(file.content.includes(Buffer.from(canary).toString("base64")), `${file.path} (base64)`).toBe(
        false,
      );
    }
  };

  it("never appears in list or inspect output, or in any file or log under SVC_HOME", async () => {
    const login = await sandbox.run(["login", "openai", "--verbose"], { input: `${canary}\n` });
    expect(login.code).toBe(0);
    expect(login.stdout + login.stderr).not.toContain(canary);
    const browser = sandbox.start([
      "login",
      "openai",
      "--connection",
      "via-browser",
      "--browser",
      "--verbose",
    ]);
    const [, url] = await browser.waitFor("stderr", LINK);
    await submitApiKeyPage(url!, canary);
    expect((await browser.result).code).toBe(0);

    const outputs = [
      ["connections"],
      ["connections", "--json"],
      ["connections", "list", "--provider", "openai", "--verbose"],
      ["connections", "inspect", "openai"],
      ["connections", "inspect", "openai", "--connection", "via-browser", "--json"],
      ["provider", "list"],
      ["provider", "list", "--json"],
      ["provider", "inspect", "openai", "--verbose"],
      ["doctor", "--json"],
      ["daemon", "logs", "-n", "500"],
    ];
    for (const args of outputs) {
      const result = await sandbox.run(args);
      expect(result.code, args.join(" ")).toBe(0);
      expect(result.stdout + result.stderr, args.join(" ")).not.toContain(canary);
    }
    // Failures that involve the connection do not echo it either.
    const exists = await sandbox.run(["login", "openai", "--verbose"], { input: `${canary}\n` });
    expect(exists.code).toBe(6);
    expect(exists.stdout + exists.stderr).not.toContain(canary);
    assertNoCanaryInFiles();
  });

  it("is printed by connections inspect --reveal, and still appears in no file afterwards", async () => {
    const revealed = await sandbox.run(["connections", "inspect", "openai", "--reveal", "--verbose"]);
    expect(revealed.code).toBe(0);
    expect(revealed.stdout).toContain(canary);
    expect(revealed.stderr).not.toContain(canary);
    assertNoCanaryInFiles();
  });
});
