/**
 * `svc run` against AWS, end to end: a local HTTPS stand-in that verifies Signature Version 4
 * exactly as AWS does (test/support/aws-upstream.ts), reached under real AWS host names through
 * SVC_PROXY_CONNECT_TO; real clients (curl --aws-sigv4, the AWS SDK for JavaScript v3) signing
 * with the placeholder keys of their environment; the daemon re-signing with the real secret.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AwsKeys, type AwsUpstream, startAwsUpstream } from "../support/aws-upstream.ts";
import { canaryChecks } from "../support/canaries.ts";
import { SvcSandbox } from "../support/cli.ts";

const PLACEHOLDER = "svc-proxy-managed";
const NODE = process.execPath;
const AGENTS = fileURLToPath(new URL("../fixtures/aws-agents/", import.meta.url));
const BUCKET = "svc-test-bucket";
/**
 * Pythons with boto3: Debian's (python3-boto3, which .ci/run installs; boto3 1.26) and the first
 * python3 on PATH when it is another one with its own boto3 (a pip install: recent versions upload
 * to S3 aws-chunked with a CRC32 trailer).
 */
function boto3Pythons(): string[] {
  const found = ["/usr/bin/python3"];
  const onPath = spawnSync("python3", ["-c", "import sys, boto3; print(sys.executable)"], {
    encoding: "utf8",
  });
  const other = onPath.status === 0 ? realpathSync(onPath.stdout.trim()) : undefined;
  if (other && other !== realpathSync(found[0]!)) found.push(other);
  return found;
}

/** Each test host and where AWS signs for it. */
const SCOPES: Record<string, { service: string; region: string }> = {
  "bedrock-runtime.us-west-2.amazonaws.com": { service: "bedrock", region: "us-west-2" },
  "dynamodb.eu-central-1.amazonaws.com": { service: "dynamodb", region: "eu-central-1" },
  "dynamodb.us-west-2.amazonaws.com": { service: "dynamodb", region: "us-west-2" },
  "sts.amazonaws.com": { service: "sts", region: "us-east-1" },
  "s3.us-west-2.amazonaws.com": { service: "s3", region: "us-west-2" },
  [`${BUCKET}.s3.us-west-2.amazonaws.com`]: { service: "s3", region: "us-west-2" },
  "abc123.execute-api.ap-southeast-2.amazonaws.com": { service: "execute-api", region: "ap-southeast-2" },
};

const keys: AwsKeys = {
  accessKeyId: `ASIA${randomBytes(8).toString("hex").toUpperCase()}`,
  secretAccessKey: randomBytes(30).toString("base64"),
  sessionToken: `IQoJb3JpZ2luX2Vj${randomBytes(96).toString("base64")}`,
};
const SECRETS = [keys.secretAccessKey, keys.sessionToken!];

const { expectNoSecret, expectOk } = canaryChecks(SECRETS);

describe("svc run: AWS Signature Version 4 signed by the daemon", () => {
  let upstream: AwsUpstream;
  let sandbox: SvcSandbox;

  const run = (args: string[], env: NodeJS.ProcessEnv = {}) => sandbox.run(["run", ...args], { env });
  /** curl signing with the placeholders of its environment, as a user's script would. */
  const curl = (service: string, region: string, extra: string) =>
    `curl -sS --fail-with-body --aws-sigv4 "aws:amz:${region}:${service}" -u "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-security-token: $AWS_SESSION_TOKEN" ${extra}`;

  beforeAll(async () => {
    upstream = await startAwsUpstream(keys, (host) => {
      const scope = SCOPES[host];
      if (!scope) throw new Error(`unexpected host ${host}`);
      return scope;
    });
    sandbox = await SvcSandbox.create({
      NODE_EXTRA_CA_CERTS: upstream.caPath,
      SVC_PROXY_CONNECT_TO: upstream.connectTo(Object.keys(SCOPES)),
    });
    const login = await sandbox.run(["login", "aws"], {
      input: `# aws configure export-credentials --format env\nexport AWS_ACCESS_KEY_ID=${keys.accessKeyId}\nexport AWS_SECRET_ACCESS_KEY=${keys.secretAccessKey}\nexport AWS_SESSION_TOKEN=${keys.sessionToken}\nAWS_REGION=us-west-2\n`,
    });
    expect(login.code, login.stderr).toBe(0);
    expectNoSecret(login.stdout + login.stderr);
  });
  afterAll(async () => {
    await sandbox?.destroy();
    await upstream?.close();
  });

  it("gives the child placeholder keys and the connection's region, never the secret", async () => {
    const result = expectOk(
      await run(["--", NODE, "-e", "console.log(JSON.stringify(process.env))"], {
        AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
      }),
    );
    const env = JSON.parse(result.stdout) as NodeJS.ProcessEnv;
    expect(env.AWS_ACCESS_KEY_ID).toBe(PLACEHOLDER);
    expect(env.AWS_SECRET_ACCESS_KEY).toBe(PLACEHOLDER);
    expect(env.AWS_SESSION_TOKEN).toBe(PLACEHOLDER);
    expect(env.AWS_REGION).toBe("us-west-2");
    expect(env.AWS_DEFAULT_REGION).toBe("us-west-2");
    // A region the parent chose, in either variable, is kept, and the other is not filled in.
    const regions = "console.log(JSON.stringify([process.env.AWS_REGION, process.env.AWS_DEFAULT_REGION]))";
    for (const [name, expected] of [
      ["AWS_REGION", ["eu-north-1", null]],
      ["AWS_DEFAULT_REGION", [null, "eu-north-1"]],
    ] as const) {
      const mine = expectOk(await run(["--", NODE, "-e", regions], { [name]: "eu-north-1" }));
      expect(JSON.parse(mine.stdout), name).toEqual(expected);
    }
  });

  it("the upstream refuses what the child signs with the placeholders", async () => {
    const before = upstream.requests.length;
    const direct = await sandbox.run([
      "run",
      "--",
      "sh",
      "-c",
      `${curl("sts", "us-east-1", "")} --noproxy '*' --connect-to sts.amazonaws.com:443:127.0.0.1:${upstream.port} "https://sts.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"`,
    ]);
    expect(direct.code).not.toBe(0);
    expect(direct.stdout).toContain("signature refused");
    expect(upstream.requests.slice(before).map((request) => request.valid)).toEqual([false]);
  });

  it.each([
    {
      name: "a global endpoint with a query string, no body",
      host: "sts.amazonaws.com",
      target: "/?Action=GetCallerIdentity&Version=2011-06-15&Tag=a%20b%2Bc",
      data: "",
    },
    {
      name: "a JSON protocol POST with x-amz-target",
      host: "dynamodb.eu-central-1.amazonaws.com",
      target: "/",
      data: `-H "content-type: application/x-amz-json-1.0" -H "x-amz-target: DynamoDB_20120810.ListTables" --data-binary '{"Limit":3}'`,
    },
    {
      name: "a unicode, percent-encoded path and repeated query keys",
      host: "abc123.execute-api.ap-southeast-2.amazonaws.com",
      target: "/prod/caf%C3%A9/na%C3%AFve%20item?b=2&a=1&a=0&empty=",
      data: "--data-binary 'ünïcödé body'",
    },
    {
      name: "an S3 object with a unicode key",
      host: "s3.us-west-2.amazonaws.com",
      target: "/svc-test-bucket/d%C3%A9j%C3%A0/vu.txt",
      data: "-X PUT --data-binary 'object body'",
    },
  ])("signs $name", async ({ host, target, data }) => {
    const scope = SCOPES[host]!;
    const before = upstream.requests.length;
    const result = expectOk(
      await run(["--", "sh", "-c", `${curl(scope.service, scope.region, data)} "https://${host}${target}"`]),
    );
    const seen = upstream.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ host, url: target, valid: true, ...scope });
    expect(seen[0]!.headers.authorization).not.toContain(PLACEHOLDER);
    expect(seen[0]!.signedHeaders).toEqual(
      expect.arrayContaining(["host", "x-amz-date", "x-amz-security-token"]),
    );
    if (scope.service === "s3") expect(seen[0]!.signedHeaders).toContain("x-amz-content-sha256");
    else expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, url: target });
  });

  it("Bedrock InvokeModel and Converse with the AWS SDK as the child", async () => {
    const before = upstream.requests.length;
    const result = expectOk(await run(["--", NODE, `${AGENTS}bedrock.mjs`]));
    expect(JSON.parse(result.stdout)).toEqual({
      invoke: { completion: "echo: héllo, wörld", stop_reason: "end_turn" },
      converse: "echo: ping",
    });
    const seen = upstream.requests.slice(before);
    expect(seen.map((request) => [request.method, request.url, request.valid])).toEqual([
      ["POST", "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke", true],
      ["POST", "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse", true],
    ]);
  });

  it("S3 PutObject and GetObject with the AWS SDK as the child", async () => {
    const before = upstream.requests.length;
    const result = expectOk(
      await run(["--", NODE, `${AGENTS}s3.mjs`, BUCKET, "notes/über file.txt", "hello from s3 ✓"]),
    );
    expect(JSON.parse(result.stdout)).toEqual({ body: "hello from s3 ✓" });
    const seen = upstream.requests.slice(before);
    expect(seen.map((request) => [request.method, request.host, request.valid])).toEqual([
      ["PUT", `${BUCKET}.s3.us-west-2.amazonaws.com`, true],
      ["GET", `${BUCKET}.s3.us-west-2.amazonaws.com`, true],
    ]);
  });

  it("a Python agent with boto3 works with only what svc run puts in its environment (the region too)", async () => {
    for (const python of boto3Pythons()) {
      const before = upstream.requests.length;
      const text = `from boto3 under ${python} ✓`;
      const result = expectOk(
        await run(["--", python, `${AGENTS}boto3_agent.py`, BUCKET, "py/naïve.txt", text]),
      );
      expect(JSON.parse(result.stdout), python).toEqual({
        region: "us-west-2",
        dynamodb_status: 200,
        body: text,
      });
      const seen = upstream.requests.slice(before);
      expect(seen.map((request) => [request.method, request.host, request.valid])).toEqual([
        ["POST", "dynamodb.us-west-2.amazonaws.com", true],
        ["PUT", `${BUCKET}.s3.us-west-2.amazonaws.com`, true],
        ["GET", `${BUCKET}.s3.us-west-2.amazonaws.com`, true],
      ]);
    }
  });

  it("a body over the limit goes UNSIGNED-PAYLOAD to S3 and is refused with 413 elsewhere", async () => {
    const big = `head -c ${33 * 1024 * 1024} /dev/zero`;
    const before = upstream.requests.length;
    expectOk(
      await run([
        "--",
        "sh",
        "-c",
        `${big} | ${curl("s3", "us-west-2", "-X PUT --data-binary @-")} -o /dev/null "https://s3.us-west-2.amazonaws.com/${BUCKET}/big.bin"`,
      ]),
    );
    expect(upstream.requests.slice(before)).toMatchObject([
      { valid: true, payloadHash: "UNSIGNED-PAYLOAD", bodyBytes: 33 * 1024 * 1024 },
    ]);
    const refused = await run([
      "--",
      "sh",
      "-c",
      `${big} | curl -sS -w '\\n%{http_code}' --data-binary @- https://bedrock-runtime.us-west-2.amazonaws.com/model/m/invoke`,
    ]);
    expectNoSecret(refused.stdout + refused.stderr);
    expect(refused.stdout).toMatch(/larger than 32 MiB[\s\S]*\n413$/);
    expect(upstream.requests).toHaveLength(before + 1);
  });

  it("passes S3's unsigned aws-chunked uploads and refuses chunk-signed ones", async () => {
    const chunked = `-X PUT -H "content-encoding: aws-chunked" -H "x-amz-decoded-content-length: 5" --data-binary $'5\\r\\nhello\\r\\n0\\r\\n\\r\\n'`;
    const before = upstream.requests.length;
    expectOk(
      await run([
        "--",
        "bash",
        "-c",
        `${curl("s3", "us-west-2", `-H "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER" ${chunked}`)} -o /dev/null "https://s3.us-west-2.amazonaws.com/${BUCKET}/chunked.txt"`,
      ]),
    );
    expect(upstream.requests.slice(before)).toMatchObject([
      { valid: true, payloadHash: "STREAMING-UNSIGNED-PAYLOAD-TRAILER" },
    ]);
    const refused = await run([
      "--",
      "bash",
      "-c",
      `curl -sS -w '\\n%{http_code}' -H "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD" ${chunked} "https://s3.us-west-2.amazonaws.com/${BUCKET}/signed-chunks.txt"`,
    ]);
    expect(refused.stdout).toMatch(/chunk-signed streaming upload[\s\S]*\n400$/);
    expect(upstream.requests).toHaveLength(before + 1);
  });

  it("keeps the secret out of every file svc wrote and out of the audit trail", async () => {
    const events = await sandbox.json<Array<{ event: string; provider: string | null }>>([
      "log",
      "-n",
      "200",
    ]);
    const proxied = events.filter((entry) => entry.event === "proxy.request");
    expect(proxied.length).toBeGreaterThanOrEqual(8);
    expect(JSON.stringify(proxied)).toContain('"signed"');
    expect(JSON.stringify(proxied)).toContain('"body_too_large"');
    expectNoSecret(JSON.stringify(events));
    for (const file of sandbox.files()) {
      for (const secret of SECRETS) expect(file.content.includes(secret), file.path).toBe(false);
    }
  });
});
