/**
 * `svc run --agent` and `svc agent allow|deny|show|revoke` end to end: the real CLI and daemon, a
 * real child (curl) calling an allowed and a disallowed provider through the proxy, a local HTTPS
 * upstream under the real API host names, and the audit log naming the agent.
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentActivity, AgentRecord } from "../../src/api/agents.ts";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import { activeIdentity, clientFor } from "../../src/client/session.ts";
import { homeLayout } from "../../src/core/paths.ts";
import { type CliResult, SvcSandbox } from "../support/cli.ts";
import { startUpstream, type Upstream } from "../support/upstream.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const OPENAI_KEY = `sk-proj-${hex(16)}`;
const ANTHROPIC_KEY = `sk-ant-api03-${hex(16)}`;
const SECRETS = [OPENAI_KEY, ANTHROPIC_KEY];

function expectNoSecret(result: CliResult): void {
  for (const secret of SECRETS) expect(result.stdout + result.stderr).not.toContain(secret);
}

describe("svc run --agent: the agent's scope applies to the child, the audit log names it", () => {
  let upstream: Upstream;
  let sandbox: SvcSandbox;
  const seen = (tag: string) => upstream.seen.filter((request) => request.url.includes(`t=${tag}`));
  /** curl prints the body, then the status code on its own line. */
  const curl = (url: string) => ["curl", "-sS", "-w", "\\n%{http_code}", url];
  const audit = async (query: string) => {
    const layout = homeLayout(sandbox.home);
    const client = clientFor(layout, sandbox.env, activeIdentity(layout));
    return (await client.get<AuditPageRecord>(`/api/audit/events?${query}`)).events;
  };

  beforeAll(async () => {
    upstream = await startUpstream();
    sandbox = await SvcSandbox.create({
      NODE_EXTRA_CA_CERTS: upstream.caPath,
      SVC_PROXY_CONNECT_TO: upstream.connectTo(["api.openai.com", "api.anthropic.com"]),
    });
    await sandbox.loginKeys([
      ["openai", OPENAI_KEY],
      ["anthropic", ANTHROPIC_KEY],
    ]);
  });
  afterAll(async () => {
    await sandbox?.destroy();
    await upstream?.close();
  });

  it("creates a scoped agent; the child reaches the allowed provider and gets a 403 naming the scope for the other", async () => {
    const created = await sandbox.json<{ handle: string; scope: string[]; active: boolean }>([
      "agent",
      "create",
      "claude",
      "--allow",
      "anthropic",
    ]);
    expect(created).toMatchObject({ handle: "claude", scope: ["anthropic"], active: false });

    const allowedTag = hex(4);
    const allowed = await sandbox.run([
      "run",
      "--agent",
      "claude",
      "--",
      ...curl(`https://api.anthropic.com/echo?t=${allowedTag}`),
    ]);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout.trim().split("\n").at(-1)).toBe("200");
    expect(seen(allowedTag)[0]?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);

    const deniedTag = hex(4);
    const denied = await sandbox.run([
      "run",
      "--agent",
      "claude",
      "--",
      ...curl(`https://api.openai.com/echo?t=${deniedTag}`),
    ]);
    expect(denied.code, denied.stderr).toBe(0);
    const lines = denied.stdout.trim().split("\n");
    expect(lines.at(-1)).toBe("403");
    const body = JSON.parse(lines.slice(0, -1).join("\n")) as { error: { message: string } };
    expect(JSON.stringify(body)).toContain(
      'the agent \\"claude\\" may use only anthropic (its scope), not openai',
    );
    expect(seen(deniedTag)).toEqual([]);
    expectNoSecret(allowed);
    expectNoSecret(denied);

    const requests = await audit("event=proxy.request&identity=claude");
    expect(requests.map((event) => [event.provider, event.status, event.identity]).sort()).toEqual([
      ["anthropic", "success", "claude"],
      ["openai", "failure", "claude"],
    ]);
    const refused = await audit("event=agent.scope_denied&identity=claude");
    expect(refused[0]).toMatchObject({ provider: "openai", detail: { scope: "anthropic" } });
  });

  it("creates the agent in one step with --agent new:<handle> --allow", async () => {
    const tag = hex(4);
    const result = await sandbox.run([
      "run",
      "--agent",
      "new:researcher",
      "--allow",
      "openai",
      "--",
      ...curl(`https://api.openai.com/echo?t=${tag}`),
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("created agent researcher (scope: openai)");
    expect(seen(tag)[0]?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    const events = await audit("event=proxy.request&identity=researcher");
    expect(events.map((event) => event.provider)).toEqual(["openai"]);
    const again = await sandbox.run(["run", "--agent", "new:researcher", "--", "true"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("--agent researcher");
  });

  it("allow, deny and show change and report the scope; an identity cannot widen its own (exit 4)", async () => {
    const widened = await sandbox.json<AgentRecord>(["agent", "allow", "claude", "openai"]);
    expect(widened.scope).toEqual(["anthropic", "openai"]);
    const narrowed = await sandbox.json<AgentRecord>(["agent", "deny", "claude", "openai"]);
    expect(narrowed.scope).toEqual(["anthropic"]);
    const shown = await sandbox.json<AgentRecord & { activity: AgentActivity }>(["agent", "show", "claude"]);
    expect(shown.activity.last_24h).toEqual(
      expect.arrayContaining([{ provider: "anthropic", status: "success", count: 1 }]),
    );
    expect(shown.last_seen).not.toBeNull();
    const text = await sandbox.run(["agent", "show", "claude"]);
    expect(text.stdout).toMatch(/scope:\s+anthropic\n/);
    expect(text.stdout).toMatch(/anthropic\s+success\s+1\s+1/);

    const own = activeIdentity(homeLayout(sandbox.home)).handle;
    const self = await sandbox.run(["agent", "allow", own, "openai"]);
    expect(self.code).toBe(4);
    expect(self.stderr).toContain("cannot change its own scope");
  });

  it("a revocation takes effect between two requests of a running child", async () => {
    const created = await sandbox.run(["agent", "create", "worker", "--allow", "anthropic"]);
    expect(created.code, created.stderr).toBe(0);
    const flag = join(sandbox.home, "..", "revoked.flag");
    const [first, second] = [hex(4), hex(4)];
    // The child calls once, waits (bounded) for the test to revoke its agent, then calls again.
    const script = [
      `curl -sS -o /dev/null -w "first %{http_code}\n" "https://api.anthropic.com/echo?t=${first}"`,
      `i=0; while [ ! -f "$1" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done`,
      `curl -sS -w "\nsecond %{http_code}\n" "https://api.anthropic.com/echo?t=${second}"`,
    ].join("\n");
    const running = sandbox.start(["run", "--agent", "worker", "--", "sh", "-c", script, "sh", flag]);
    await running.waitFor("stdout", /first 200/);
    const revoked = await sandbox.run(["agent", "revoke", "worker"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    writeFileSync(flag, "");
    const result = await running.result;
    expect(result.stdout).toMatch(/second 403/);
    expect(result.stdout).toMatch(/AuthenticationFailedError.*worker.* was revoked/);
    expect(seen(first)[0]?.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(seen(second)).toEqual([]);
    expectNoSecret(result);
  });

  it("revokes the agent: its next run is refused, and the audit log says who revoked it", async () => {
    const revoked = await sandbox.run(["agent", "revoke", "claude"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    const tag = hex(4);
    const refused = await sandbox.run([
      "run",
      "--agent",
      "claude",
      "--",
      ...curl(`https://api.anthropic.com/echo?t=${tag}`),
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('"claude" was revoked');
    expect(seen(tag)).toEqual([]);
    const events = await audit("event=agent.revoked");
    expect(events[0]).toMatchObject({
      identity: activeIdentity(homeLayout(sandbox.home)).handle,
      detail: { agent: "claude" },
    });
  });

  it("agent list shows each local agent's scope, last use and revocation, and the keys alone without a daemon", async () => {
    const own = activeIdentity(homeLayout(sandbox.home)).handle;
    type Listed = { handle: string; active: boolean; scope?: string[] | null; last_seen?: string | null };
    const listed = await sandbox.json<Array<Listed & { revoked_at?: string | null }>>(["agent", "list"]);
    const byHandle = new Map(listed.map((agent) => [agent.handle, agent]));
    expect([...byHandle.keys()].sort()).toEqual([own, "claude", "researcher", "worker"].sort());
    expect(byHandle.get(own)).toMatchObject({ active: true, scope: null, revoked_at: null });
    expect(byHandle.get("researcher")).toMatchObject({ active: false, scope: ["openai"], revoked_at: null });
    expect(byHandle.get("researcher")?.last_seen).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(byHandle.get("claude")?.revoked_at).toMatch(/^\d{4}-\d\d-\d\dT/);

    const text = await sandbox.run(["agent", "list"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/HANDLE\s+SCOPE\s+LAST SEEN\s+DID/);
    expect(text.stdout).toMatch(new RegExp(`\\*\\s+${own}\\s+unrestricted\\s+\\d{4}-`));
    expect(text.stdout).toMatch(/researcher\s+openai\s+\d{4}-/);
    expect(text.stdout).toMatch(/claude\s+revoked \d{4}-/);

    // Something that is not svc holds the daemon's port: the local keys are still listed, and why
    // their scope is unknown is said once.
    const squatter = http.createServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    try {
      const port = (squatter.address() as AddressInfo).port;
      const offline = await sandbox.run(["agent", "list"], {
        env: { SVC_BASE_URL: `http://127.0.0.1:${port}` },
      });
      expect(offline.code, offline.stderr).toBe(0);
      expect(offline.stderr).toContain("scope and last use unknown");
      expect(offline.stderr).toContain(`127.0.0.1:${port}`);
      expect(offline.stdout).toMatch(/researcher\s+\?\s+\?\s+did:key:/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
