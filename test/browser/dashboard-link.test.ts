import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BrowserSessionRecord } from "../../src/api/browser-sessions.ts";
import { CHROMIUM, launchChromium, newContext, screenshot, sessionCookie } from "../support/browser.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { WebSession } from "../support/web-session.ts";

const PASSWORD = "correct horse battery staple";

describe(`one-time dashboard links in Chromium (${CHROMIUM})`, () => {
  let t: TestDaemon;
  let browser: Browser;
  let evil: http.Server;
  let evilPort: number;
  let planted = "";

  const ownerLink = async () => (await t.client.post<{ url: string }>("/api/session", {})).url;
  const whoIs = async (cookie: string | undefined) => {
    const response = await fetch(`${t.daemon.url}/api/auth/me`, {
      headers: { cookie: `svc_session=${cookie}` },
    });
    return response.ok ? ((await response.json()) as BrowserSessionRecord) : undefined;
  };

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestDaemon(), launchChromium()]);
    expect((await new WebSession(t.daemon.url).signIn("bob@example.com", PASSWORD, true)).status).toBe(200);
    // Another site (localhost is not 127.0.0.1's site) links to whatever link it was given.
    evil = http.createServer((_request, response) => {
      response.setHeader("content-type", "text/html");
      response.end(
        `<!doctype html><title>Free credits</title><a id="go" href="${planted}">Claim your credits</a>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve));
    evilPort = (evil.address() as AddressInfo).port;
  });
  afterAll(async () => {
    evil?.close();
    await browser?.close();
    await t?.stop();
  });

  it("the CLI's own link opens the dashboard in one step in a fresh browser", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(await ownerLink());
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    expect((await whoIs(await sessionCookie(context, t.daemon.url)))?.role).toBe("admin");
    await context.close();
  });

  it("a link clicked on another site, in a browser signed in as someone else, asks first and names both", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${t.daemon.url}/login`);
    await page.getByLabel("Email").fill("bob@example.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    const bobCookie = await sessionCookie(context, t.daemon.url);
    expect((await whoIs(bobCookie))?.email).toBe("bob@example.com");

    planted = await ownerLink();
    await page.goto(`http://localhost:${evilPort}/`);
    await page.locator("#go").click();
    await page.getByRole("heading", { level: 1, name: "Sign in with this link?" }).waitFor();
    const text = await page.locator("main").innerText();
    expect(text).toContain("bob@example.com");
    expect(text).toContain("this daemon's owner");
    await screenshot(page, "link-confirm-desktop-light");
    // Nothing changed yet: Bob is still Bob.
    expect(await sessionCookie(context, t.daemon.url)).toBe(bobCookie);
    expect((await whoIs(bobCookie))?.email).toBe("bob@example.com");

    await page.getByRole("button", { name: /Continue as this daemon's owner/ }).click();
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    const switched = await sessionCookie(context, t.daemon.url);
    expect((await whoIs(switched))?.role).toBe("admin");
    expect(await whoIs(bobCookie)).toBeUndefined();
    await context.close();
  });
});
