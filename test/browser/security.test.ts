import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import type { BrowserSessionRecord } from "../../src/api/browser-sessions.ts";
import type { Connection } from "../../src/api/connections.ts";
import {
  CHROMIUM,
  launchChromium,
  NARROW,
  newContext,
  screenshot,
  sessionCookie,
} from "../support/browser.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { WebSession } from "../support/web-session.ts";

const PASSWORD = "correct horse battery staple";

describe(`dashboard sessions and roles in Chromium (${CHROMIUM})`, () => {
  let t: TestDaemon;
  let browser: Browser;
  let admin: BrowserContext;
  let adminPage: Page;
  let user: BrowserContext;
  let userPage: Page;
  let evil: http.Server;
  let evilUrl: string;

  /** A scripted client holding a browser context's session cookie. */
  const webSessionOf = async (context: BrowserContext) => {
    const web = new WebSession(t.daemon.url);
    web.cookie = `svc_session=${await sessionCookie(context, t.daemon.url)}`;
    const me = await web.request("GET", "/api/auth/me");
    expect(me.status).toBe(200);
    const record = (await me.json()) as BrowserSessionRecord;
    web.csrf = record.csrf_token;
    return { web, me: record };
  };
  const openaiConnections = async () =>
    (await t.client.get<Connection[]>("/api/connections?provider=openai")).map(
      (row) => `${row.connection}${row.is_default ? "*" : ""}`,
    );

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestDaemon(), launchChromium()]);
    await loginWithApiKey(t.client, "openai", "sk-admin-default-key-0123456789");
    await loginWithApiKey(t.client, "openai", "sk-admin-other-key-0123456789", { connection: "other" });
    admin = await newContext(browser);
    adminPage = await admin.newPage();
    const { url } = await t.client.post<{ url: string }>("/api/session", {});
    await adminPage.goto(url);
    await adminPage.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    user = await newContext(browser);
    userPage = await user.newPage();

    // Another site's page: same host, other port (same-site, cross-origin), so the Lax cookie goes along.
    const target = `${t.daemon.url}/api/connections/openai/other`;
    evil = http.createServer((_request, response) => {
      response.setHeader("content-type", "text/html");
      response.end(`<!doctype html><title>Win a prize</title>
<form id="f" method="post" action="${target}/default"><input name="csrf_token" value="guessed"></form>
<script>
fetch(${JSON.stringify(`${target}/logout`)}, { method: "POST", mode: "no-cors", credentials: "include", body: "{}" })
  .finally(() => document.getElementById("f").submit());
</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    evil?.close();
    await browser?.close();
    await t?.stop();
  });

  it("a user registered in the page sees only their own events, in the page and through the API", async () => {
    await userPage.goto(`${t.daemon.url}/audit`);
    await userPage.getByRole("heading", { level: 1, name: "Sign in to svc" }).waitFor();
    expect(new URL(userPage.url()).search).toBe("?next=%2Faudit");
    await screenshot(userPage, "login-desktop-light");
    await userPage.getByRole("tab", { name: "Create account" }).click();
    await userPage.getByLabel("Email").fill("user@example.com");
    await userPage.getByLabel("Password").fill("short");
    await userPage.getByRole("button", { name: "Create account" }).click();
    await userPage.getByRole("alert").getByText("at least 10 characters").waitFor();
    await userPage.getByLabel("Password").fill(PASSWORD);
    await userPage.getByRole("button", { name: "Create account" }).click();

    // `next` brought the new user to the audit page, scoped to their own events.
    await userPage.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
    expect(new URL(userPage.url()).pathname).toBe("/audit");
    expect(await userPage.getByText("user@example.com").isVisible()).toBe(true);
    expect(await userPage.getByText("Your events", { exact: true }).isVisible()).toBe(true);
    await userPage.getByRole("table", { name: "Your audit events" }).waitFor();
    const rows = await userPage.locator("tbody tr").allInnerTexts();
    expect(rows.length).toBeGreaterThan(0);
    // Registering, then signing in (the page does both): nothing of anyone else's.
    expect(rows.every((row) => /account\.(registered|signed_in)/.test(row))).toBe(true);
    expect(rows.some((row) => row.includes("account.registered"))).toBe(true);
    const text = await userPage.locator("main table").innerText();
    expect(text).not.toContain("provider.login");
    expect(text).not.toContain(t.identity.handle);
    await screenshot(userPage, "audit-user-desktop-light");

    // Asking for the admin's provider in the URL changes nothing.
    await userPage.goto(`${t.daemon.url}/audit?provider=openai`);
    await userPage.getByRole("heading", { name: "No events" }).waitFor();

    const { web, me } = await webSessionOf(user);
    expect(me).toMatchObject({ role: "user", email: "user@example.com" });
    const events = (await (
      await web.request("GET", "/api/audit/events?limit=500")
    ).json()) as AuditPageRecord;
    expect(events.events.length).toBeGreaterThan(0);
    for (const event of events.events) {
      expect(event.principal_id).toBe(me.principal_id);
      expect(event.identity).not.toBe(t.identity.handle);
    }
    const filtered = (await (
      await web.request("GET", "/api/audit/events?provider=openai&limit=500")
    ).json()) as AuditPageRecord;
    expect(filtered.events).toEqual([]);
    expect(await (await web.request("GET", "/api/connections")).json()).toEqual([]);

    // The admin sees everyone's events, the new user's registration included.
    const global = await t.client.get<AuditPageRecord>("/api/audit/events?limit=500");
    expect(global.events.some((event) => event.principal_id === me.principal_id)).toBe(true);
    expect(global.events.some((event) => event.identity === t.identity.handle)).toBe(true);

    // The empty connections page, on a phone.
    await userPage.setViewportSize(NARROW);
    await userPage.getByRole("link", { name: "Connections" }).click();
    await userPage.getByRole("heading", { name: "No connections yet" }).waitFor();
    await screenshot(userPage, "connections-empty-narrow-light");
  });

  it("refuses state changes without the CSRF token, with a wrong one, or from another origin; nothing changes", async () => {
    const before = await openaiConnections();
    expect(before).toEqual(["default*", "other"]);
    const { web } = await webSessionOf(admin);
    const path = "/api/connections/openai/other/default";
    const attempts = [
      await web.request("POST", path, { csrf: null }),
      await web.request("POST", path, { csrf: "wrong-token" }),
      await web.request("POST", path, { origin: "http://evil.example" }),
      await web.request("POST", path, { origin: null }),
      await web.request("POST", "/api/connections/openai/other/logout", { csrf: null }),
      await web.request("POST", "/api/logout", { csrf: "wrong-token" }),
    ];
    for (const response of attempts) {
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: string }).error).toBe("OperationNotAllowedError");
    }

    // A page on another origin posts a form and fires a no-cors fetch with the admin's cookie.
    const refused = ["/logout", "/default"].map((action) =>
      adminPage.waitForResponse((response) =>
        response.url().endsWith(`/api/connections/openai/other${action}`),
      ),
    );
    await adminPage.goto(evilUrl);
    for (const response of await Promise.all(refused)) expect(response.status()).toBe(403);
    await adminPage.waitForURL(`${t.daemon.url}/api/connections/openai/other/default`);
    await adminPage.getByText("OperationNotAllowedError").waitFor();

    expect(await openaiConnections()).toEqual(before);
    expect((await web.request("GET", "/api/auth/me")).status).toBe(200);

    // The same request with the token and the daemon's own Origin goes through.
    expect((await web.request("POST", path)).status).toBe(200);
    expect(await openaiConnections()).toEqual(["default", "other*"]);
  });

  it("never adopts a session id planted before sign-in", async () => {
    const base = t.daemon.url;
    const victim = await newContext(browser);
    const page = await victim.newPage();
    await victim.addCookies([{ name: "svc_session", value: "planted-by-attacker", url: base }]);
    await page.goto(`${base}/`);
    await page.getByRole("heading", { level: 1, name: "Sign in to svc" }).waitFor();
    await page.getByLabel("Email").fill("user@example.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    const issued = await sessionCookie(victim, base);
    expect(issued).toBeDefined();
    expect(issued).not.toBe("planted-by-attacker");
    const planted = new WebSession(base);
    planted.cookie = "svc_session=planted-by-attacker";
    expect((await planted.request("GET", "/api/auth/me")).status).toBe(401);

    // A real session of the attacker's, planted in the victim's browser, ends when the victim signs in.
    const attacker = new WebSession(base);
    expect((await attacker.signIn("attacker@example.com", PASSWORD, true)).status).toBe(200);
    await victim.clearCookies();
    await victim.addCookies([{ name: "svc_session", value: attacker.cookie!.split("=")[1]!, url: base }]);
    const status = await page.evaluate(
      async ([email, password]) =>
        (
          await fetch("/api/auth/login", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email, password }),
          })
        ).status,
      ["user@example.com", PASSWORD],
    );
    expect(status).toBe(200);
    const renewed = await sessionCookie(victim, base);
    expect(renewed).not.toBe(attacker.cookie!.split("=")[1]);
    expect((await attacker.request("GET", "/api/auth/me")).status).toBe(401);
    const { me } = await webSessionOf(victim);
    expect(me.email).toBe("user@example.com");
    await victim.close();
  });

  it("signing out ends the session on the server: the old cookie is refused afterwards", async () => {
    await userPage.setViewportSize({ width: 1280, height: 800 });
    await userPage.goto(`${t.daemon.url}/`);
    await userPage.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    const { web } = await webSessionOf(user);
    await userPage.getByRole("button", { name: "Sign out" }).click();
    await userPage.getByText("You have signed out.").waitFor();
    expect(new URL(userPage.url()).pathname).toBe("/login");
    expect(await sessionCookie(user, t.daemon.url)).toBeUndefined();
    expect((await web.request("GET", "/api/auth/me")).status).toBe(401);
    expect((await web.request("GET", "/api/connections")).status).toBe(401);
    await userPage.goto(`${t.daemon.url}/providers`);
    await userPage.getByRole("heading", { level: 1, name: "Sign in to svc" }).waitFor();
    await userPage.emulateMedia({ colorScheme: "dark" });
    await screenshot(userPage, "login-desktop-dark");
    await userPage.setViewportSize(NARROW);
    await screenshot(userPage, "login-narrow-dark");
  });
});
