import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { RegisteredIdentityRecord } from "../../src/api/identities.ts";
import { DaemonClient } from "../../src/client/daemon-client.ts";
import { IdentityFiles } from "../../src/identity/identity-files.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { WebSession } from "../support/web-session.ts";

const PASSWORD = "correct horse battery staple";

describe("dashboard sign-in, sessions and CSRF", () => {
  let t: TestDaemon;
  let admin: WebSession;
  beforeAll(async () => {
    t = await startTestDaemon();
    await loginWithApiKey(t.client, "openai", `sk-${randomBytes(16).toString("hex")}`);
    admin = new WebSession(t.daemon.url);
    const { url } = await t.client.post<{ url: string }>("/api/session", {});
    expect((await admin.openLink(url)).status).toBe(303);
  });
  afterAll(async () => {
    await t.stop();
  });

  it("a one-time link signs the local owner in as admin, once, and leads where it was asked to", async () => {
    const browser = new WebSession(t.daemon.url);
    const link = await t.client.post<{ url: string; expires_at: string }>("/api/session", { next: "/audit" });
    expect(new Date(link.expires_at).getTime() - Date.now()).toBeLessThanOrEqual(60_000);
    const opened = await browser.openLink(link.url);
    expect(opened.status).toBe(303);
    expect(opened.headers.get("location")).toBe("/audit");
    const cookie = opened.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^svc_session=[\w-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Lax$/);
    const me = await (await browser.request("GET", "/api/auth/me")).json();
    expect(me).toMatchObject({ role: "admin", email: null, identity: expect.stringMatching(/^browser:/) });

    const again = await new WebSession(t.daemon.url).openLink(link.url);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("svc dashboard");
    // Only paths on the daemon: no open redirect.
    await expect(t.client.post("/api/session", { next: "//evil.example/" })).rejects.toThrow(
      /path on the daemon/,
    );
  });

  it("registers an account as user, hashes its password, and signs in with it", async () => {
    const browser = new WebSession(t.daemon.url);
    const registered = await browser.signIn("Ada@Example.com", PASSWORD, true);
    expect(registered.status).toBe(200);
    expect(await registered.json()).toMatchObject({ role: "user", email: "ada@example.com" });
    const row = await t.daemon.context.store.db
      .selectFrom("principals")
      .select("password_hash")
      .where("email", "=", "ada@example.com")
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$/);
    expect(row.password_hash).not.toContain(PASSWORD);

    // A taken email: the registration answers as for a new one; the owner's password still signs in.
    const taken = await new WebSession(t.daemon.url).signIn("ada@example.com", PASSWORD, true);
    expect(taken.status).toBe(200);
    const short = await new WebSession(t.daemon.url).signIn("bob@example.com", "short", true);
    expect(short.status).toBe(400);

    const again = new WebSession(t.daemon.url);
    expect((await again.signIn("ada@example.com", PASSWORD)).status).toBe(200);
    expect((await again.request("GET", "/api/auth/me")).status).toBe(200);
  });

  it("refuses a wrong password, then rate-limits the email with Retry-After", async () => {
    const browser = new WebSession(t.daemon.url);
    await browser.signIn("limit@example.com", PASSWORD, true);
    const attacker = new WebSession(t.daemon.url);
    for (let i = 0; i < 5; i++) {
      const wrong = await attacker.signIn("limit@example.com", `wrong password ${i}`);
      expect(wrong.status).toBe(401);
      expect((await wrong.json()).message).toBe("the email or password is wrong");
    }
    const limited = await attacker.signIn("limit@example.com", PASSWORD);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ error: "RateLimitedError" });
    // An unknown email answers exactly like a wrong password.
    const unknown = await new WebSession(t.daemon.url).signIn("nobody@example.com", PASSWORD);
    expect(unknown.status).toBe(401);
    expect((await unknown.json()).message).toBe("the email or password is wrong");
  });

  it("accepts the cookie on dashboard routes only, and state changes only with Origin and CSRF", async () => {
    const list = await admin.request("GET", "/api/connections");
    expect(list.status).toBe(200);
    expect(JSON.stringify(await list.json())).toContain("openai");

    const path = "/api/connections/openai/default/default";
    const noCsrf = await admin.request("POST", path, { json: {}, csrf: null });
    expect(noCsrf.status).toBe(403);
    expect((await noCsrf.json()).message).toMatch(/CSRF/);
    expect((await admin.request("POST", path, { json: {}, csrf: "forged" })).status).toBe(403);
    expect((await admin.request("POST", path, { json: {}, origin: "https://evil.example" })).status).toBe(
      403,
    );
    expect((await admin.request("POST", path, { json: {}, origin: null })).status).toBe(403);
    expect((await admin.request("POST", path, { json: {} })).status).toBe(200);

    // Secrets never reach a browser: no reveal, no credential resolve.
    expect((await admin.request("GET", "/api/connections/openai/default?reveal=true")).status).toBe(403);
    const resolve = await admin.request("POST", "/api/credentials/resolve", {
      json: { provider: "openai" },
    });
    expect(resolve.status).toBe(401);
    expect(JSON.stringify(await resolve.json())).not.toContain("sk-");
  });

  it("session fixation: a planted cookie never authenticates and sign-in issues a new one", async () => {
    const victim = new WebSession(t.daemon.url);
    const planted = `svc_session=${randomBytes(32).toString("base64url")}`;
    victim.cookie = planted;
    expect((await victim.request("GET", "/api/auth/me")).status).toBe(401);
    await victim.signIn("fixation@example.com", PASSWORD, true);
    expect(victim.cookie).not.toBe(planted);
    const attacker = new WebSession(t.daemon.url);
    attacker.cookie = planted;
    expect((await attacker.request("GET", "/api/auth/me")).status).toBe(401);

    // Signing in again ends the session the browser had.
    const before = victim.cookie;
    await victim.signIn("fixation@example.com", PASSWORD);
    const stale = new WebSession(t.daemon.url);
    stale.cookie = before;
    expect((await stale.request("GET", "/api/auth/me")).status).toBe(401);
  });

  it("sign-out ends the session on the server, not only in the browser", async () => {
    const browser = new WebSession(t.daemon.url);
    await browser.signIn("logout@example.com", PASSWORD, true);
    const kept = browser.cookie;
    const out = await browser.request("POST", "/api/logout", { json: {} });
    expect(out.status).toBe(204);
    expect(browser.cookie).toBeUndefined();
    const replay = new WebSession(t.daemon.url);
    replay.cookie = kept;
    expect((await replay.request("GET", "/api/connections")).status).toBe(401);
    const rows = await t.daemon.context.store.db.selectFrom("browser_sessions").select("id").execute();
    expect(rows.every((row) => /^[0-9a-f]{64}$/.test(row.id))).toBe(true);
    expect(rows.map((row) => row.id)).not.toContain(kept);
  });

  it("a user sees only their own principal's events; an admin sees everyone's", async () => {
    const user = new WebSession(t.daemon.url);
    await user.signIn("scope@example.com", PASSWORD, true);
    const started = await user.request("POST", "/api/auth/providers/anthropic/connect", { json: {} });
    expect(started.status).toBe(201);
    const session = (await started.json()) as AuthSession;
    expect(session).toMatchObject({
      provider: "anthropic",
      status: "waiting_for_user",
      waiting_for: "api_key",
    });
    expect(session.next?.url).toContain(`/api/auth/sessions/${session.session_id}/input?token=`);
    const read = await user.request("GET", `/api/auth/sessions/${session.session_id}`);
    expect(read.status).toBe(200);
    // Another browser session cannot read it.
    expect((await admin.request("GET", `/api/auth/sessions/${session.session_id}`)).status).toBe(404);
    expect(
      (await user.request("POST", `/api/auth/sessions/${session.session_id}/cancel`, { json: {} })).status,
    ).toBe(200);

    const me = (await (await user.request("GET", "/api/auth/me")).json()) as { principal_id: string };
    const own = (await (await user.request("GET", "/api/audit/events?limit=200")).json()) as AuditPageRecord;
    expect(own.events.length).toBeGreaterThan(0);
    expect(own.events.every((event) => event.principal_id === me.principal_id)).toBe(true);
    const all = (await (await admin.request("GET", "/api/audit/events?limit=200")).json()) as AuditPageRecord;
    expect(new Set(all.events.map((event) => event.principal_id)).size).toBeGreaterThan(1);
    expect(all.events.some((event) => event.event === "provider.login" && event.provider === "openai")).toBe(
      true,
    );
    expect(own.events.some((event) => event.provider === "openai")).toBe(false);
  });

  it("claims a remote identity through a one-time link and the signed-in account", async () => {
    // An identity registered without the local proof, as a CLI on another machine would.
    const remote = new IdentityFiles(`${t.root}/elsewhere`).create();
    const client = new DaemonClient({ baseUrl: t.daemon.url, identity: remote });
    const registered = await client.post<RegisteredIdentityRecord>("/api/identities", {
      handle: remote.handle,
      did: remote.did,
    });
    expect(registered.principal_id).toBeUndefined();
    const claimPath = new URL(registered.claim_url!).pathname;
    expect(claimPath).toMatch(/^\/api\/claim\/[\w-]{43}$/);

    const browser = new WebSession(t.daemon.url);
    const signedOut = await (await browser.request("GET", claimPath)).text();
    expect(signedOut).toContain(`/login?next=${encodeURIComponent(claimPath)}`);
    expect(signedOut).toContain(remote.handle);
    await browser.signIn("claimer@example.com", PASSWORD, true);
    const page = await (await browser.request("GET", claimPath)).text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
    expect(page).toContain("claimer@example.com");

    const forged = await browser.request("POST", `${claimPath}/confirm`, { form: { csrf_token: "forged" } });
    expect(forged.status).toBe(403);
    const confirmed = await browser.request("POST", `${claimPath}/confirm`, { form: { csrf_token: csrf } });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain("Identity claimed");
    const whoami = await client.get<{ principal_id?: string; principal_role?: string }>("/api/whoami");
    expect(whoami.principal_role).toBe("user");
    const me = (await (await browser.request("GET", "/api/auth/me")).json()) as { principal_id: string };
    expect(whoami.principal_id).toBe(me.principal_id);

    const reused = await browser.request("POST", `${claimPath}/confirm`, { form: { csrf_token: csrf } });
    expect(reused.status).toBe(400);
    const events = (await (
      await browser.request("GET", "/api/audit/events?event=identity.claimed")
    ).json()) as AuditPageRecord;
    expect(events.events[0]).toMatchObject({ identity: remote.handle, detail: { method: "link" } });
  });

  it("keeps passwords, cookies and CSRF tokens out of the audit log file", async () => {
    const log = readFileSync(t.layout.auditLog, "utf8");
    expect(log).not.toContain(PASSWORD);
    expect(log).not.toContain(admin.cookie!.split("=")[1]!);
    expect(log).not.toContain(admin.csrf!);
  });
});
