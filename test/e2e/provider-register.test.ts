import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SvcSandbox } from "../support/cli.ts";

const VALID = {
  name: "acme-e2e",
  display_name: "Acme",
  description: "The Acme API, for end-to-end tests.",
  auth_type: "api_key",
  flow: "api_key",
  api_url: ["api.acme.example", "https://uploads.acme.example/v1"],
  api_key: {
    header_name: "X-Acme-Key",
    header_prefix: null,
    key_pattern: "^acme_[a-z0-9]{8,}$",
    key_pattern_hint: "starts with acme_",
  },
  env: ["ACME_API_KEY"],
  docs_url: "https://docs.acme.example/auth",
};

const OAUTH = {
  name: "acme-oauth",
  display_name: "Acme OAuth",
  description: "The Acme API with OAuth.",
  auth_type: "oauth2",
  flow: "pkce",
  api_url: "api.acme.example",
  oauth: {
    authorization_url: "https://acme.example/oauth/authorize",
    token_url: "https://acme.example/oauth/token",
  },
  docs_url: "https://docs.acme.example/oauth",
};

/** Twenty-odd broken definitions: the file content and what the refusal must mention. */
const MALFORMED: Array<{ label: string; content: string; message: RegExp }> = [
  {
    label: "bad JSON",
    content: '{"name": "acme-x",\n  "display_name": "Acme" "flow": 1}',
    message: /not valid JSON.*line 2/,
  },
  { label: "truncated JSON", content: '{"name": "acme-x"', message: /not valid JSON.*position/ },
  { label: "empty file", content: "", message: /not valid JSON/ },
  { label: "a JSON array", content: "[]", message: /expected object/ },
  {
    label: "a 100 KiB file",
    content: JSON.stringify({ ...VALID, description: "x".repeat(100 * 1024) }),
    message: /larger than the 64 KiB/,
  },
  {
    label: 'unsafe name "../x"',
    content: JSON.stringify({ ...VALID, name: "../x" }),
    message: /name: must be 1-63 characters/,
  },
  {
    label: 'unsafe name "A B"',
    content: JSON.stringify({ ...VALID, name: "A B" }),
    message: /name: must be 1-63 characters/,
  },
  {
    label: "wrong type for display_name",
    content: JSON.stringify({ ...VALID, display_name: 42 }),
    message: /display_name: .*string/,
  },
  {
    label: "wrong type for env",
    content: JSON.stringify({ ...VALID, env: "ACME_API_KEY" }),
    message: /env: .*array/,
  },
  {
    label: "http api_url",
    content: JSON.stringify({ ...VALID, api_url: "http://api.acme.example/v1" }),
    message: /api_url.*https/,
  },
  {
    label: "http token_url",
    content: JSON.stringify({ ...OAUTH, oauth: { ...OAUTH.oauth, token_url: "http://acme.example/token" } }),
    message: /oauth.token_url: must use https/,
  },
  {
    label: "flow/auth_type mismatch",
    content: JSON.stringify({ ...VALID, flow: "pkce" }),
    message: /flow: must be "api_key" when auth_type is "api_key"/,
  },
  {
    label: "oauth2 with the api_key flow",
    content: JSON.stringify({ ...OAUTH, flow: "api_key" }),
    message: /flow: must be one of pkce/,
  },
  {
    label: "missing docs_url",
    content: JSON.stringify({ ...VALID, docs_url: undefined }),
    message: /docs_url: is required/,
  },
  {
    label: "missing name",
    content: JSON.stringify({ ...VALID, name: undefined }),
    message: /name: is required/,
  },
  {
    label: "an unknown field",
    content: JSON.stringify({ ...VALID, colour: "red" }),
    message: /colour: unknown field/,
  },
  {
    label: "source present",
    content: JSON.stringify({ ...VALID, source: "bundled" }),
    message: /source: is derived/,
  },
  {
    label: "bad regex in api_url",
    content: JSON.stringify({ ...VALID, api_url: "regex:^https://(api" }),
    message: /api_url: regex is not a valid regular expression/,
  },
  {
    label: "bad key_pattern",
    content: JSON.stringify({ ...VALID, api_key: { key_pattern: "[a-" } }),
    message: /api_key.key_pattern: is not a valid regular expression/,
  },
  {
    label: "{base_url} not at the start",
    content: JSON.stringify({ ...OAUTH, api_url: "https://acme.example/{base_url}/v1" }),
    message: /\{base_url\} may only appear once, at the start/,
  },
  {
    label: "{base_url} in an api_key provider",
    content: JSON.stringify({ ...VALID, api_url: "{base_url}/v1" }),
    message: /\{base_url\} is only available to oauth2 providers/,
  },
  {
    label: "oauth.base_url without a template",
    content: JSON.stringify({ ...OAUTH, oauth: { ...OAUTH.oauth, base_url: "https://tenant.acme.example" } }),
    message: /oauth.base_url: is set but no URL uses \{base_url\}/,
  },
  {
    label: "oauth2 without an oauth section",
    content: JSON.stringify({ ...OAUTH, oauth: undefined }),
    message: /oauth: is required when auth_type is "oauth2"/,
  },
  {
    label: "pkce without token_url",
    content: JSON.stringify({ ...OAUTH, oauth: { authorization_url: OAUTH.oauth.authorization_url } }),
    message: /oauth.token_url: is required for the pkce flow/,
  },
  {
    label: "a bad header name",
    content: JSON.stringify({ ...VALID, api_key: { header_name: "X Acme Key" } }),
    message: /api_key.header_name: must be an HTTP header name/,
  },
  {
    label: "a bad env var name",
    content: JSON.stringify({ ...VALID, env: ["1ACME"] }),
    message: /env\[0\]: must be an environment variable name/,
  },
];

describe("svc provider register, remove and list", () => {
  let sandbox: SvcSandbox;
  let dir: string;
  let validFile: string;
  const copy = () => join(sandbox.home, "providers", "acme-e2e.json");

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    dir = mkdtempSync(join(tmpdir(), "svc-providers-"));
    validFile = join(dir, "acme.json");
    writeFileSync(validFile, `${JSON.stringify(VALID, null, 2)}\n`);
    expect((await sandbox.run(["whoami"])).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("registers a valid custom file and copies it into providers/ (0700 directory, 0600 file)", async () => {
    const result = await sandbox.run(["provider", "register", validFile]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("✓ Registered provider acme-e2e (new custom provider)");
    expect(readFileSync(copy(), "utf8")).toBe(readFileSync(validFile, "utf8"));
    expect(statSync(copy()).mode & 0o777).toBe(0o600);
    expect(statSync(join(sandbox.home, "providers")).mode & 0o777).toBe(0o700);

    const list = await sandbox.json<{ custom: Array<Record<string, unknown>> }>(["provider", "list"]);
    expect(list.custom).toEqual([
      {
        name: "acme-e2e",
        display_name: "Acme",
        auth_type: "api_key",
        flow: "api_key",
        source: "custom",
        connections: [],
        default_connection: null,
      },
    ]);
    expect((await sandbox.run(["provider", "list"])).stdout).toMatch(
      /^acme-e2e\s+api_key\s+api_key\s+custom\s+-$/m,
    );
    const inspected = await sandbox.json<{ provider: Record<string, unknown> }>([
      "provider",
      "inspect",
      "acme-e2e",
    ]);
    expect(inspected.provider).toMatchObject({ name: "acme-e2e", source: "custom", env: ["ACME_API_KEY"] });
  });

  it("re-registering needs --force: exit 7 without flags (no terminal) and with --yes; 0 with --force", async () => {
    const plain = await sandbox.run(["provider", "register", validFile, "--json"]);
    expect(plain.code).toBe(7);
    expect(JSON.parse(plain.stdout)).toMatchObject({
      error: "ProviderAlreadyRegisteredError",
      message: expect.stringContaining("--force"),
    });
    const yes = await sandbox.run(["provider", "register", validFile, "--yes"]);
    expect(yes.code).toBe(7);
    expect(yes.stderr).toContain('"acme-e2e" already exists');

    const changed = { ...VALID, display_name: "Acme Corp" };
    writeFileSync(validFile, JSON.stringify(changed));
    const forced = await sandbox.run(["provider", "register", validFile, "--force", "--json"]);
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({
      created: false,
      overrides_bundled: false,
      provider: { name: "acme-e2e", display_name: "Acme Corp", source: "custom" },
      file: copy(),
    });
    expect(JSON.parse(readFileSync(copy(), "utf8")).display_name).toBe("Acme Corp");
    expect((await sandbox.run(["provider", "register", validFile, "--force", "--yes"])).code).toBe(0);
  });

  it("logs in to the custom provider; remove is refused while it has connections (exit 4)", async () => {
    expect((await sandbox.run(["login", "acme-e2e"], { input: "wrong\n" })).code).toBe(2);
    const login = await sandbox.run(["login", "acme-e2e"], { input: "acme_0123456789\n" });
    expect(login.code).toBe(0);
    const refused = await sandbox.run(["provider", "remove", "acme-e2e", "--json"]);
    expect(refused.code).toBe(4);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      error: "OperationNotAllowedError",
      message: expect.stringContaining("svc provider revoke acme-e2e"),
    });
    expect(existsSync(copy())).toBe(true);
    expect((await sandbox.run(["provider", "revoke", "acme-e2e"])).code).toBe(0);
  });

  it("remove deletes the custom provider and its copy; then it is unknown (exit 4)", async () => {
    const removed = await sandbox.run(["provider", "remove", "acme-e2e"]);
    expect(removed.code).toBe(0);
    expect(removed.stderr).toContain("✓ Removed the custom provider acme-e2e");
    expect(existsSync(copy())).toBe(false);
    expect((await sandbox.run(["provider", "inspect", "acme-e2e"])).code).toBe(4);
    expect((await sandbox.run(["provider", "remove", "acme-e2e"])).code).toBe(4);
    expect((await sandbox.run(["provider", "remove", "../x"])).code).toBe(4);
  });

  it("overrides a bundled provider only with --force; remove resets it, then reports it unchanged", async () => {
    const file = join(dir, "openai.json");
    const bundled = await sandbox.json<{ provider: Record<string, unknown> }>([
      "provider",
      "inspect",
      "openai",
    ]);
    const { source: _source, ...definition } = bundled.provider;
    writeFileSync(file, JSON.stringify({ ...definition, display_name: "OpenAI (custom)" }));

    expect((await sandbox.run(["provider", "register", file])).code).toBe(7);
    const forced = await sandbox.json<{ overrides_bundled: boolean }>([
      "provider",
      "register",
      file,
      "--force",
    ]);
    expect(forced.overrides_bundled).toBe(true);
    const list = await sandbox.json<{ bundled: Array<{ name: string }>; custom: Array<{ name: string }> }>([
      "provider",
      "list",
    ]);
    expect(list.custom.map((item) => item.name)).toEqual(["openai"]);
    expect(list.bundled.map((item) => item.name)).not.toContain("openai");

    const reset = await sandbox.run(["provider", "remove", "openai"]);
    expect(reset.code).toBe(0);
    expect(reset.stderr).toContain("Reset openai to the bundled definition");
    expect(existsSync(join(sandbox.home, "providers", "openai.json"))).toBe(false);
    const unchanged = await sandbox.json<{ name: string; result: string }>(["provider", "remove", "openai"]);
    expect(unchanged).toMatchObject({ name: "openai", result: "unchanged" });
    const plain = await sandbox.run(["provider", "remove", "openai"]);
    expect(plain.stderr).toContain("openai is already the bundled definition");
    expect(
      (await sandbox.json<{ provider: { display_name: string } }>(["provider", "inspect", "openai"])).provider
        .display_name,
    ).toBe("OpenAI");
  });

  it(`refuses ${MALFORMED.length} malformed definitions with exit 2 and a message naming the problem`, async () => {
    const before = (await sandbox.run(["provider", "list", "--json"])).stdout;
    const providersDir = join(sandbox.home, "providers");
    const copiesBefore = existsSync(providersDir)
      ? sandbox.files().filter((f) => f.path.startsWith(providersDir)).length
      : 0;
    for (const [index, { label, content, message }] of MALFORMED.entries()) {
      const file = join(dir, `malformed-${index}.json`);
      writeFileSync(file, content);
      const result = await sandbox.run(["provider", "register", file, "--force"]);
      expect(result.code, `${label}: ${result.stderr}`).toBe(2);
      expect(result.stderr, label).toContain(file);
      expect(result.stderr, label).toMatch(message);
      const json = await sandbox.run(["provider", "register", file, "--json"]);
      expect(json.code, label).toBe(2);
      expect(JSON.parse(json.stdout), label).toMatchObject({ error: "InvalidInputError" });
    }
    expect((await sandbox.run(["provider", "list", "--json"])).stdout).toBe(before);
    const copiesAfter = existsSync(providersDir)
      ? sandbox.files().filter((f) => f.path.startsWith(providersDir)).length
      : 0;
    expect(copiesAfter).toBe(copiesBefore);
  });

  it("exits 2 for a file that does not exist or is a directory", async () => {
    const missing = await sandbox.run(["provider", "register", join(dir, "missing.json")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing.json");
    expect((await sandbox.run(["provider", "register", dir])).code).toBe(2);
    expect((await sandbox.run(["provider", "register"])).code).toBe(2);
  });
});
