import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Connection } from "../../src/api/connections.ts";
import {
  CHROMIUM,
  DESKTOP,
  launchChromium,
  NARROW,
  newContext,
  screenshot,
  screenshotVariants,
} from "../support/browser.ts";
import { SVC_BIN } from "../support/cli.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** Runs the real `svc` CLI against the test daemon, on the daemon's own home (so it is the local owner). */
function svc(
  t: TestDaemon,
  args: string[],
  input = "",
): Promise<{ code: number; stdout: string; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SVC_BIN, ...args], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SVC_HOME: t.layout.home,
        SVC_BASE_URL: t.daemon.url,
        SVC_NO_BROWSER: "1",
        NO_COLOR: "1",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, output }));
    child.stdin.end(input);
  });
}

const focusedName = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null;
    return element ? (element.getAttribute("aria-label") ?? element.innerText ?? "").trim() : "";
  });

describe(`the dashboard in Chromium (${CHROMIUM})`, () => {
  let t: TestDaemon;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];

  const connections = (provider: string) =>
    t.client.get<Connection[]>(`/api/connections?provider=${provider}`);

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestDaemon(), launchChromium()]);
    context = await newContext(browser);
    page = await context.newPage();
    // A CSP violation or a script error shows up here.
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it("opens through the /api/session link, shows a connection the CLI made, and sets default and logs out", async () => {
    const login = await svc(
      t,
      ["login", "openai", "--connection", "cli"],
      `sk-cli-${randomBytes(12).toString("hex")}\n`,
    );
    expect(login.output).toContain('Connected openai (connection "cli")');
    expect(login.code).toBe(0);
    await loginWithApiKey(t.client, "openai", `sk-backup-${randomBytes(12).toString("hex")}`, {
      connection: "backup",
    });

    // `svc dashboard --json` hands over the one-time link (POST /api/session) instead of opening it.
    const dashboard = await svc(t, ["dashboard", "--json"]);
    expect(dashboard.code, dashboard.output).toBe(0);
    const { url } = JSON.parse(dashboard.stdout) as { url: string };
    expect(url).toMatch(new RegExp(`^${t.daemon.url}/auth/link/\\S+$`));
    await page.goto(url);
    expect(new URL(page.url()).pathname).toBe("/");
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    const openai = page.getByRole("region", { name: "OpenAI" });
    await openai.getByText("cli", { exact: true }).waitFor();
    expect(await openai.getByRole("listitem").count()).toBe(2);
    const cliRow = openai.getByRole("listitem").filter({ hasText: "cli" });
    expect(await cliRow.innerText()).toMatch(/Default[\s\S]*Connected/);
    expect(await cliRow.innerText()).toContain("No expiry");
    expect(await page.getByText("Local owner").isVisible()).toBe(true);
    await screenshot(page, "connections-desktop-light");

    await page.getByRole("button", { name: "Set default OpenAI backup" }).click();
    await page.getByText("“backup” is now the default OpenAI connection.").waitFor();
    expect((await connections("openai")).find((row) => row.is_default)?.connection).toBe("backup");
    await openai.getByRole("button", { name: "Set default OpenAI cli" }).waitFor();

    await page.getByRole("button", { name: "Log out OpenAI cli" }).click();
    const confirm = page.getByRole("dialog", { name: "Log out of OpenAI?" });
    await confirm.waitFor();
    await screenshot(page, "connections-confirm-logout");
    await confirm.getByRole("button", { name: "Log out" }).click();
    await page.getByText("Logged out of OpenAI “cli”.").waitFor();
    expect((await connections("openai")).map((row) => row.connection)).toEqual(["backup"]);
    await openai.getByText("cli", { exact: true }).waitFor({ state: "detached" });

    // The link worked once.
    const reused = await context.newPage();
    await reused.goto(url);
    await reused.getByRole("heading", { name: "This dashboard link has expired" }).waitFor();
    await reused.close();

    await screenshotVariants(page, "connections");
  });

  it("connects an API-key provider through the bridge form; the audit page shows the login; the key never reaches the page", async () => {
    const canary = `gsk_canary${randomBytes(16).toString("hex")}`;
    const bodies: string[] = [];
    const seen: Promise<void>[] = [];
    context.on("response", (response) => {
      seen.push(
        response.text().then(
          (text) => void bodies.push(`${response.url()}\n${text}`),
          () => undefined,
        ),
      );
    });

    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Providers" }).click();
    await page.getByRole("heading", { level: 1, name: "Providers" }).waitFor();
    await screenshot(page, "providers-desktop-light", { fullPage: false });
    await page.setViewportSize(NARROW);
    await page.emulateMedia({ colorScheme: "dark" });
    await screenshot(page, "providers-narrow-dark", { fullPage: false });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(NARROW.width);
    await page.setViewportSize(DESKTOP);
    await page.emulateMedia({ colorScheme: "light" });
    await page.getByRole("searchbox", { name: "Search providers" }).fill("groq");
    await page.getByText("1 of ").waitFor();
    expect(await page.getByRole("button", { name: /^Connect / }).count()).toBe(1);
    const [bridge] = await Promise.all([
      context.waitForEvent("page"),
      page.getByRole("button", { name: "Connect Groq" }).click(),
    ]);
    const dialog = page.getByRole("dialog", { name: "Connect Groq" });
    await dialog.getByText("Paste your Groq API key in the tab that opened.").waitFor();
    await screenshot(page, "providers-connect-waiting");

    await bridge.waitForLoadState();
    expect(new URL(bridge.url()).pathname).toMatch(/^\/api\/auth\/sessions\/[^/]+\/input$/);
    // A key in the wrong shape: the form comes back with the provider's hint.
    await bridge.getByLabel("API key").fill("not-a-groq-key");
    await bridge.getByRole("button", { name: "Save key" }).click();
    await bridge.waitForLoadState();
    const answer = await bridge.locator("main").innerText();
    expect(answer, "the bridge form refused a post from a real browser").toContain("starts with gsk_");
    await bridge.getByLabel("API key").fill(canary);
    await bridge.getByRole("button", { name: "Save key" }).click();
    await bridge.getByRole("heading", { name: "Groq connected" }).waitFor();
    await screenshot(bridge, "bridge-connected");

    // Back to the dashboard's tab (a background tab gets its animation frames throttled).
    await page.bringToFront();
    await dialog.getByText("Groq connected.").waitFor();
    await screenshot(page, "providers-connect-done");
    await dialog.getByRole("button", { name: "Done" }).click();
    await page.getByText("Connected · default").waitFor();
    expect((await connections("groq")).map((row) => row.connection)).toEqual(["default"]);

    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
    expect(await page.getByText("All principals", { exact: true }).isVisible()).toBe(true);
    const row = page.getByRole("row").filter({ hasText: "provider.login" }).filter({ hasText: "Groq" });
    await row.first().waitFor();
    expect(await row.first().innerText()).toMatch(/default[\s\S]*success/);
    await screenshot(page, "audit-desktop-light");
    await page.getByRole("combobox", { name: "Event" }).selectOption("provider.login");
    await page
      .getByRole("row")
      .filter({ hasText: "account.signed_in" })
      .first()
      .waitFor({ state: "detached" });
    expect(new URL(page.url()).search).toBe("?event=provider.login");

    await screenshotVariants(page, "audit");

    await Promise.all(seen);
    expect(bodies.length).toBeGreaterThan(5);
    for (const body of bodies) expect(body.includes(canary), body.slice(0, 200)).toBe(false);
    expect(await page.content()).not.toContain(canary);
    expect(await page.evaluate(() => document.body.innerText)).not.toContain(canary);
    expect(await bridge.content()).not.toContain(canary);
    await bridge.close();
  });

  it("is usable by keyboard, with landmarks and labelled controls", async () => {
    await page.bringToFront();
    await page.goto(`${t.daemon.url}/`);
    await page.getByRole("heading", { level: 1, name: "Connections" }).waitFor();
    expect(await page.getByRole("banner").count()).toBe(1);
    expect(await page.getByRole("main").count()).toBe(1);

    await page.keyboard.press("Tab");
    expect(await focusedName(page)).toBe("Skip to content");
    const reached: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      await page.keyboard.press("Tab");
      reached.push(await focusedName(page));
    }
    expect(reached).toEqual(["svc home", "Connections", "Providers", "Agents", "Audit log"]);
    // The focus ring is visible.
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe(
      "none",
    );

    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Providers" }).waitFor();
    expect(await focusedName(page)).toBe("Providers");
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("H1");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).type)).toBe("search");
    await page.keyboard.type("mistral");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Connect Mistral AI");

    // Enter on a Connect button opens the login dialog with focus inside; Escape closes it and
    // focus returns to the button.
    const [bridge] = await Promise.all([context.waitForEvent("page"), page.keyboard.press("Enter")]);
    await page.getByRole("dialog", { name: "Connect Mistral AI" }).waitFor();
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest("dialog")))).toBe(true);
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Connect Mistral AI");
    await bridge.close();
    await page.bringToFront();

    // 60 calls through the proxy: more than one page of the audit log.
    const now = Date.now();
    await t.client.post("/audit/events", {
      events: Array.from({ length: 60 }, (_, i) => ({
        timestamp: new Date(now - i * 1000).toISOString(),
        event: "proxy.request",
        status: "success",
        provider: "openai",
        connection: "backup",
        detail: { method: "GET", host: "api.openai.com", path: "/v1/models", status_code: 200 },
      })),
    });
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByRole("table", { name: "Audit events of all principals" }).waitFor();
    expect(await page.locator("tbody tr").count()).toBe(50);
    await page.getByRole("button", { name: "Load more" }).focus();
    await page.keyboard.press("Enter");
    await page.getByText(/^\d+ events · that is all$/).waitFor();
    expect(await page.locator("tbody tr").count()).toBeGreaterThan(60);
    expect(await page.getByRole("button", { name: "Load more" }).count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("TR");
    for (const column of ["Time", "Event", "Provider", "Connection", "Identity", "Status", "Source"]) {
      expect(await page.getByRole("columnheader", { name: column }).count()).toBe(1);
    }
    expect(await page.getByRole("combobox", { name: "Provider" }).count()).toBe(1);
    expect(await page.getByRole("combobox", { name: "Event" }).count()).toBe(1);
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(1);

    // Readable on a 360 px window: nothing needs sideways scrolling.
    await page.setViewportSize({ width: 360, height: 740 });
    for (const [link, heading] of [
      ["Connections", "Connections"],
      ["Providers", "Providers"],
      ["Audit log", "Audit log"],
    ]) {
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: link }).click();
      await page.getByRole("heading", { level: 1, name: heading }).waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth), link).toBeLessThanOrEqual(360);
    }
    await page.setViewportSize(DESKTOP);
    expect(pageErrors).toEqual([]);
  });
});
