import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SvcSandbox } from "../support/cli.ts";

const LINK = /^ {2}(http:\/\/127\.0\.0\.1:\d+\/auth\/link\/\S+)$/m;

describe("svc dashboard", () => {
  let sandbox: SvcSandbox;

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("--json gives a one-time link that signs a browser in once", async () => {
    const link = await sandbox.json<{ url: string; expires_at: string }>(["dashboard"]);
    expect(link.url).toMatch(new RegExp(`^${sandbox.baseUrl}/auth/link/\\S+$`));
    expect(Date.parse(link.expires_at)).toBeGreaterThan(Date.now());

    const first = await fetch(link.url, { redirect: "manual" });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/");
    expect(first.headers.get("set-cookie")).toMatch(/^svc_session=[^;]+;/);

    const cookie = first.headers.get("set-cookie")!.split(";")[0]!;
    const me = await fetch(`${sandbox.baseUrl}/api/auth/me`, { headers: { cookie } });
    expect(me.status).toBe(200);

    const second = await fetch(link.url, { redirect: "manual" });
    expect(second.status).toBe(400);
    expect(second.headers.get("set-cookie")).toBeNull();
  });

  it("--audit --print prints a link to the audit page on stdout", async () => {
    const result = await sandbox.run(["dashboard", "--audit", "--print"]);
    expect(result.code).toBe(0);
    const url = result.stdout.trim();
    expect(url).toMatch(/\/auth\/link\/\S+\?next=%2Faudit$/);
    const opened = await fetch(url, { redirect: "manual" });
    expect(opened.status).toBe(303);
    expect(opened.headers.get("location")).toBe("/audit");
  });

  it("with SVC_NO_BROWSER=1 prints the link on stderr instead of opening it", async () => {
    const result = await sandbox.run(["dashboard"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("Open this link in a browser to sign in to the dashboard");
    const url = LINK.exec(result.stderr)?.[1];
    expect(url).toBeDefined();
    expect((await fetch(url!, { redirect: "manual" })).status).toBe(303);
  });
});
