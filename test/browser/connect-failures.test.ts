/**
 * The dashboard's Connect dialog hears of a failed login at once, with the provider's words:
 * client credentials the provider refuses on the bridge page end the dialog's wait too.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { CHROMIUM, launchChromium, newContext } from "../support/browser.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { oauthProvider } from "../support/oauth.ts";

describe(`the Connect dialog in Chromium (${CHROMIUM})`, () => {
  let t: TestDaemon;
  let server: AuthServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    [t, server, browser] = await Promise.all([startTestDaemon(), startAuthServer(), launchChromium()]);
    context = await newContext(browser);
    page = await context.newPage();
    // Registered before the dashboard loads its catalogue.
    await t.client.post("/api/providers", oauthProvider("refusing", server, "device_code"));
    const { url } = await t.client.post<{ url: string }>("/api/session", {});
    await page.goto(url);
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([t?.stop(), server?.close()]);
  });

  it("shows the provider's refusal of the client credentials entered on the bridge page", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Providers" }).click();
    await page.getByRole("searchbox", { name: "Search providers" }).fill("refusing");
    const [bridge] = await Promise.all([
      context.waitForEvent("page"),
      page.getByRole("button", { name: "Connect Test refusing" }).click(),
    ]);
    const dialog = page.getByRole("dialog", { name: "Connect Test refusing" });

    await bridge.waitForLoadState();
    await bridge.getByLabel("Client ID").fill("no-such-client");
    await bridge.getByLabel("Client secret").fill("wrong-secret");
    await bridge.getByRole("button", { name: "Save and continue" }).click();
    await bridge.waitForLoadState();
    expect(await bridge.locator("main").innerText()).toContain("invalid_client");

    await page.bringToFront();
    await dialog.getByText("Connecting Test refusing failed.").waitFor({ timeout: 15_000 });
    expect(await dialog.innerText()).toContain("invalid_client");
  });
});
