import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEventRecord } from "../../src/api/audit.ts";
import type { Connection } from "../../src/api/connections.ts";
import type { OnboardReport } from "../../src/cli/commands/onboard.ts";
import { type CliResult, SVC_BIN, SvcSandbox } from "../support/cli.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

/** Runs the real CLI in `cwd` (onboard reads the dotenv files of the current directory). */
function runIn(
  sandbox: SvcSandbox,
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], {
      cwd,
      env: { ...sandbox.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/** The onboard report: the last line of --json output. */
function report(result: CliResult): OnboardReport {
  expect(result.code, result.stderr + result.stdout).toBe(0);
  const lines = result.stdout.trim().split("\n");
  return JSON.parse(lines.at(-1)!) as OnboardReport;
}

describe("svc onboard", () => {
  let sandbox: SvcSandbox;
  let project: string;
  // Canary values: each must appear nowhere the user or a log could see.
  const anthropicKey = `sk-ant-canary-${hex(16)}`;
  const openaiLocal = `sk-canarylocal${hex(16)}`;
  const openaiEnvFile = `sk-canaryenvfile${hex(16)}`;
  const mistralKey = `mistral-canary-${hex(16)}`;
  const herokuKey = `heroku-canary-${hex(8)}`;
  const canaries = [anthropicKey, openaiLocal, openaiEnvFile, mistralKey, herokuKey];
  const processEnv = { MISTRAL_API_KEY: mistralKey };

  const assertNoCanary = (text: string) => {
    for (const canary of canaries) expect(text).not.toContain(canary);
  };
  const loginEvents = async () => {
    const events = await sandbox.json<AuditEventRecord[]>(["log", "-n", "500"]);
    return events.filter((event) => event.event === "provider.login");
  };

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    project = mkdtempSync(join(tmpdir(), "svc-onboard-project-"));
    writeFileSync(
      join(project, ".env"),
      [
        "# shared settings",
        `export ANTHROPIC_API_KEY="${anthropicKey}"`,
        `OPENAI_API_KEY=${openaiEnvFile} # loses to .env.local`,
        `HEROKU_API_KEY='${herokuKey}'`,
        "DATABASE_URL=postgres://u:p@localhost/db?sslmode=disable",
        "",
      ].join("\n"),
    );
    writeFileSync(join(project, ".env.local"), `OPENAI_API_KEY=${openaiLocal}\n`);
    writeFileSync(join(project, ".env.example"), "OPENAI_API_KEY=sk-your-key-here\n");
  });
  afterAll(async () => {
    await sandbox.destroy();
    rmSync(project, { recursive: true, force: true });
  });

  it("imports the keys of .env, .env.local and the environment without printing or logging them", async () => {
    const first = await runIn(sandbox, project, ["onboard"], processEnv);
    expect(first.code, first.stderr).toBe(0);
    assertNoCanary(first.stdout + first.stderr);
    expect(first.stdout).toMatch(/^identity:\s+\S+ \(created\)$/m);
    expect(first.stdout).toMatch(/^scanned:\s+environment, \.env\.local, \.env$/m);
    expect(first.stdout).toMatch(/^anthropic\s+ANTHROPIC_API_KEY\s+\.env\s+only in env\s+imported$/m);
    expect(first.stdout).toMatch(/^openai\s+OPENAI_API_KEY\s+\.env\.local\s+only in env\s+imported$/m);
    expect(first.stdout).toMatch(/^mistral\s+MISTRAL_API_KEY\s+environment\s+only in env\s+imported$/m);
    expect(first.stdout).toContain(
      "openai: .env has a different value; OPENAI_API_KEY from .env.local counts",
    );
    expect(first.stdout).toMatch(/svc login <provider>`: heroku \(HEROKU_API_KEY set here\)/);
    expect(first.stdout).toContain("✓ Set up: 3 keys imported.");
    const imported = await loginEvents();
    expect(imported).toHaveLength(3);
    for (const event of imported) expect(event.detail).toMatchObject({ flow: "api_key", via: "onboard" });

    const connections = await sandbox.json<Connection[]>(["connections"]);
    const redacted = Object.fromEntries(
      connections.map((connection) => [
        connection.provider,
        connection.credential.type === "api_key" ? connection.credential.redacted : "",
      ]),
    );
    expect(redacted).toEqual({
      anthropic: `••••${anthropicKey.slice(-4)}`,
      mistral: `••••${mistralKey.slice(-4)}`,
      // .env.local wins over .env.
      openai: `••••${openaiLocal.slice(-4)}`,
    });
    expect(await loginEvents()).toHaveLength(3);

    // Nothing under SVC_HOME holds a key in clear: not the debug log, not the audit log.
    const files = sandbox.files();
    expect(files.map((file) => file.path)).toContain(join(sandbox.home, "client", "logs", "svc.log"));
    for (const file of files) assertNoCanary(file.content.toString("latin1"));
  });

  it("changes nothing the second time", async () => {
    const before = await sandbox.json<Connection[]>(["connections"]);
    const eventsBefore = await loginEvents();

    const human = await runIn(sandbox, project, ["onboard"], processEnv);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^anthropic\s+ANTHROPIC_API_KEY\s+\.env\s+both, same\s+unchanged$/m);
    expect(human.stdout).toContain("✓ Unchanged: svc is already set up for this environment.");
    expect(human.stdout).not.toContain("(created)");

    const again = report(await runIn(sandbox, project, ["onboard", "--json"], processEnv));
    expect(again.status).toBe("unchanged");
    expect(again.changed).toBe(false);
    expect(again.identity.created).toBe(false);
    expect(again.claim.claimed).toBe("already");
    expect(again.providers.map((item) => [item.provider, item.state, item.result])).toEqual([
      ["anthropic", "same", "unchanged"],
      ["mistral", "same", "unchanged"],
      ["openai", "same", "unchanged"],
    ]);
    expect(again.needs_login).toEqual([{ provider: "heroku", variables: ["HEROKU_API_KEY"] }]);

    expect(await sandbox.json<Connection[]>(["connections"])).toEqual(before);
    expect(await loginEvents()).toEqual(eventsBefore);
  });

  it("--scan-only reports each kind of drift and imports nothing", async () => {
    const scanDir = join(project, "scan");
    mkdirSync(scanDir);
    const groqKey = `gsk_${hex(20)}`;
    canaries.push(groqKey);
    writeFileSync(
      join(scanDir, ".env"),
      // anthropic: the same key; openai: another one; groq: not in svc. mistral is only in svc here.
      `ANTHROPIC_API_KEY=${anthropicKey}\nOPENAI_API_KEY=${openaiEnvFile}\nGROQ_API_KEY=${groqKey}\n`,
    );
    const before = await sandbox.json<Connection[]>(["connections"]);
    const eventsBefore = await loginEvents();

    const scan = report(await runIn(sandbox, scanDir, ["onboard", "--scan-only", "--json"]));
    expect(scan.scan_only).toBe(true);
    expect(scan.providers).toEqual([
      {
        provider: "anthropic",
        variable: "ANTHROPIC_API_KEY",
        source: ".env",
        connection: "default",
        state: "same",
      },
      {
        provider: "groq",
        variable: "GROQ_API_KEY",
        source: ".env",
        connection: "default",
        state: "env_only",
      },
      { provider: "mistral", connection: "default", state: "svc_only" },
      {
        provider: "openai",
        variable: "OPENAI_API_KEY",
        source: ".env",
        connection: "default",
        state: "different",
      },
    ]);

    const human = await runIn(sandbox, scanDir, ["onboard", "--scan-only"]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^PROVIDER\s+VARIABLE\s+SOURCE\s+STATE$/m);
    expect(human.stdout).toMatch(/^groq\s+GROQ_API_KEY\s+\.env\s+only in env$/m);
    expect(human.stdout).toMatch(/^mistral\s+-\s+-\s+only in svc$/m);
    expect(human.stdout).toMatch(/^openai\s+OPENAI_API_KEY\s+\.env\s+both, different$/m);
    expect(human.stdout).toContain("Scan only: nothing was imported; `svc onboard` would import 1 key.");
    assertNoCanary(human.stdout + human.stderr);

    expect(await sandbox.json<Connection[]>(["connections"])).toEqual(before);
    expect(await loginEvents()).toEqual(eventsBefore);

    // Without --scan-only a different key is kept, not overwritten, and says how to replace it.
    const imported = report(await runIn(sandbox, scanDir, ["onboard", "--json"]));
    const openai = imported.providers.find((item) => item.provider === "openai");
    expect(openai).toMatchObject({ state: "different", result: "kept" });
    expect(openai?.message).toContain("svc logout openai --connection default");
    expect(imported.providers.find((item) => item.provider === "groq")?.result).toBe("imported");
    const after = await sandbox.json<Connection[]>(["connections"]);
    expect(after.find((item) => item.provider === "openai")).toEqual(
      before.find((item) => item.provider === "openai"),
    );
  });

  it("saves --base-url as daemon_base_url, which later commands use", async () => {
    const empty = mkdtempSync(join(tmpdir(), "svc-onboard-empty-"));
    try {
      const saved = report(
        await runIn(sandbox, empty, ["onboard", "--base-url", `${sandbox.baseUrl}/`, "--json"], {
          SVC_BASE_URL: "",
        }),
      );
      expect(saved.saved_base_url).toBe(sandbox.baseUrl);
      const config = JSON.parse(readFileSync(join(sandbox.home, "client", "config.json"), "utf8"));
      expect(config.daemon_base_url).toBe(sandbox.baseUrl);

      const whoami = await runIn(sandbox, empty, ["whoami", "--json"], { SVC_BASE_URL: "" });
      expect(whoami.code).toBe(0);
      expect(JSON.parse(whoami.stdout).daemon_url).toBe(sandbox.baseUrl);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("refuses --quiet with exit 2", async () => {
    for (const args of [
      ["--quiet", "onboard"],
      ["onboard", "--quiet"],
    ]) {
      const result = await runIn(sandbox, project, args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("svc onboard does not support --quiet");
    }
  });
});

describe("svc onboard with an AWS key pair in .env", () => {
  let sandbox: SvcSandbox;
  let project: string;
  const accessKeyId = `AKIA${hex(8).toUpperCase()}`;
  const secret = `canary/${hex(18)}`;
  const sessionToken = `IQoJcanary${hex(40)}`;
  const canaries = [secret, sessionToken];
  const AWS_PROVIDERS = ["aws", "bedrock", "s3"];

  const assertNoCanary = (text: string) => {
    for (const canary of canaries) expect(text).not.toContain(canary);
  };
  const awsRows = (result: OnboardReport) =>
    result.providers
      .filter((provider) => AWS_PROVIDERS.includes(provider.provider))
      .map(({ provider, variable, source, state, result: done }) => ({
        provider,
        variable,
        source,
        state,
        result: done,
      }));

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    project = mkdtempSync(join(tmpdir(), "svc-onboard-aws-"));
    writeFileSync(
      join(project, ".env"),
      [
        `AWS_ACCESS_KEY_ID=${accessKeyId}`,
        `AWS_SECRET_ACCESS_KEY="${secret}"`,
        `AWS_SESSION_TOKEN=${sessionToken}`,
        "AWS_DEFAULT_REGION=eu-west-1",
        "",
      ].join("\n"),
    );
  });
  afterAll(async () => {
    await sandbox.destroy();
    rmSync(project, { recursive: true, force: true });
  });

  it("imports the pair, its session token and region into each AWS provider, and finds it the same next time", async () => {
    const first = await runIn(sandbox, project, ["onboard", "--json"]);
    assertNoCanary(first.stdout + first.stderr);
    const imported = { variable: "AWS_ACCESS_KEY_ID", source: ".env", state: "env_only", result: "imported" };
    expect(awsRows(report(first))).toEqual(AWS_PROVIDERS.map((provider) => ({ provider, ...imported })));
    const connections = await sandbox.json<Connection[]>(["connections"]);
    for (const provider of AWS_PROVIDERS) {
      const connection = connections.find((entry) => entry.provider === provider);
      expect(connection?.credential, provider).toEqual({
        type: "aws_sigv4",
        access_key_id: accessKeyId,
        redacted: `••••${secret.slice(-4)}`,
        has_session_token: true,
        region: "eu-west-1",
      });
    }

    const second = await runIn(sandbox, project, ["onboard", "--json"]);
    const same = { variable: "AWS_ACCESS_KEY_ID", source: ".env", state: "same", result: "unchanged" };
    expect(awsRows(report(second))).toEqual(AWS_PROVIDERS.map((provider) => ({ provider, ...same })));
    expect(report(second).status).toBe("unchanged");
    for (const file of sandbox.files()) assertNoCanary(file.content.toString("latin1"));
  });

  it("keeps svc's pair when .env holds another, and refuses a pair split across files, naming both", async () => {
    writeFileSync(
      join(project, ".env.local"),
      `AWS_ACCESS_KEY_ID=${accessKeyId}\nAWS_SECRET_ACCESS_KEY=rotated-${hex(12)}\n`,
    );
    const different = await runIn(sandbox, project, ["onboard", "--json"]);
    const kept = { variable: "AWS_ACCESS_KEY_ID", source: ".env.local", state: "different", result: "kept" };
    expect(awsRows(report(different))).toEqual(AWS_PROVIDERS.map((provider) => ({ provider, ...kept })));

    writeFileSync(join(project, ".env.local"), `AWS_SECRET_ACCESS_KEY=other-${hex(12)}\n`);
    const split = await runIn(sandbox, project, ["onboard"]);
    expect(split.code, split.stderr).toBe(0);
    assertNoCanary(split.stdout + split.stderr);
    expect(split.stdout).toMatch(/^aws\s+AWS_ACCESS_KEY_ID\s+\.env\s+only in svc\s+unchanged$/m);
    expect(split.stdout).toContain(
      "aws: AWS_ACCESS_KEY_ID counts from .env but AWS_SECRET_ACCESS_KEY from .env.local; keep the pair in one place",
    );
    const connections = await sandbox.json<Connection[]>(["connections"]);
    const aws = connections.find((entry) => entry.provider === "aws")?.credential;
    expect(aws).toMatchObject({ access_key_id: accessKeyId, redacted: `••••${secret.slice(-4)}` });
  });
});
