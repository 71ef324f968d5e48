import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentRecord } from "../../src/api/agents.ts";
import { getAgent, setAgentScope } from "../../src/client/agents-api.ts";
import { DaemonClient } from "../../src/client/daemon-client.ts";
import { registerIdentity } from "../../src/client/session.ts";
import { AuthenticationFailedError } from "../../src/core/errors.ts";
import { IdentityFiles } from "../../src/identity/identity-files.ts";
import { CHROMIUM, launchChromium, newContext, screenshot, screenshotVariants } from "../support/browser.ts";
import { loginWithApiKey, recordProxyTraffic, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const PASSWORD = "correct horse battery staple";

describe(`the Agents page in Chromium (${CHROMIUM})`, () => {
  let t: TestDaemon;
  let browser: Browser;
  let admin: BrowserContext;
  let adminPage: Page;
  let claude: DaemonClient;
  const pageErrors: string[] = [];

  /** A named identity on the daemon's home: claimed by the local owner (admin) unless `claim` is false. */
  async function identity(handle: string, claim = true): Promise<DaemonClient> {
    const created = new IdentityFiles(t.layout.identities).create(handle);
    const client = new DaemonClient({ baseUrl: t.daemon.url, identity: created });
    if (claim) await registerIdentity(client, created, t.layout);
    else await client.post("/api/identities", { handle, did: created.did });
    return client;
  }

  /** Proxy calls as the agent's `svc run` would report them, spread over the last days. */
  async function requests(client: DaemonClient, calls: Array<[string, string, number, number]>) {
    const now = Date.now();
    const events = calls.flatMap(([provider, status, count, hoursAgo]) =>
      Array.from({ length: count }, (_, i) => ({
        timestamp: new Date(now - hoursAgo * 3_600_000 - i * 1000).toISOString(),
        event: "proxy.request",
        status,
        provider,
        detail: {
          method: "POST",
          host: `api.${provider}.com`,
          path: "/v1",
          status_code: status === "success" ? 200 : 403,
        },
      })),
    );
    await recordProxyTraffic(t, client, events);
  }

  function watch(page: Page) {
    // A CSP violation or a script error shows up here; refused requests (the forged one, the
    // signed-out probe) are answers the tests look at themselves.
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        pageErrors.push(message.text());
      }
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
  }

  beforeAll(async () => {
    [t, browser] = await Promise.all([startTestDaemon(), launchChromium()]);
    await loginWithApiKey(t.client, "openai", "sk-admin-default-key-0123456789");
    await loginWithApiKey(t.client, "openai", "sk-admin-work-key-0123456789", { connection: "work" });
    await loginWithApiKey(t.client, "anthropic", "sk-ant-admin-key-0123456789");
    claude = await identity("claude");
    await setAgentScope(t.client, "claude", ["anthropic", "openai:work"]);
    await requests(claude, [
      ["anthropic", "success", 14, 2],
      ["anthropic", "failure", 1, 3],
      ["openai", "success", 6, 50],
      ["openai", "error", 1, 60],
      ["github", "failure", 2, 1],
    ]);
    const ci = await identity("ci-runner");
    await setAgentScope(t.client, "ci-runner", []);
    await requests(ci, [["openai", "failure", 3, 100]]);
    admin = await newContext(browser);
    adminPage = await admin.newPage();
    watch(adminPage);
    const { url } = await t.client.post<{ url: string }>("/api/session", { next: "/agents" });
    await adminPage.goto(url);
    await adminPage.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it("shows the admin every agent with its scope, last use and a per-provider chart a screen reader reads as a table", async () => {
    expect(await adminPage.getByText("All principals").isVisible()).toBe(true);
    const card = adminPage.getByRole("region", { name: "claude" });
    await card.waitFor();
    expect(
      await card.getByRole("list", { name: "claude may use" }).getByRole("listitem").allInnerTexts(),
    ).toEqual(["anthropic", "openai:work"]);
    expect(await card.getByText("Scoped", { exact: true }).isVisible()).toBe(true);
    expect(await card.getByText(/Last seen/).isVisible()).toBe(true);
    const table = card.getByRole("table", { name: "Requests claude made through the proxy, per provider" });
    const rows = await table.getByRole("row").allInnerTexts();
    expect(rows.map((row) => row.replace(/\s+/g, " ").trim())).toEqual([
      "Provider Chart 7 days Failed 24 h",
      "Anthropic 15 1 15",
      "OpenAI 7 1 0",
      "GitHub 2 2 2",
    ]);
    // The bars are drawn by the page (inline SVG, no network) and hidden from assistive technology.
    expect(await table.locator("svg.activity-bar[aria-hidden='true']").count()).toBe(3);
    const ci = adminPage.getByRole("region", { name: "ci-runner" });
    expect(await ci.innerText()).toContain("Nothing");
    const own = adminPage.getByRole("region", { name: t.identity.handle });
    expect(await own.getByText("Unrestricted", { exact: true }).isVisible()).toBe(true);
    await screenshot(adminPage, "agents-admin-desktop-light");
    await screenshotVariants(adminPage, "agents-admin");
    expect(pageErrors).toEqual([]);
  });

  it("edits a scope from the keyboard, with a before-and-after confirmation and the CSRF token", async () => {
    const edit = adminPage.getByRole("button", { name: "Edit scope of claude" });
    await edit.focus();
    await adminPage.keyboard.press("Enter");
    const dialog = adminPage.getByRole("dialog", { name: "Scope of claude" });
    await dialog.waitFor();
    const input = dialog.getByLabel("Providers and connections", { exact: true });
    expect(await input.evaluate((element) => element === document.activeElement)).toBe(true);
    await input.fill("anthropic, github:work, not a scope");
    await adminPage.keyboard.press("Enter");
    await dialog.getByRole("alert").getByText("“not a scope” is not a provider").waitFor();
    await input.fill("anthropic, github:work");
    expect(await dialog.innerText()).toMatch(/After saving: anthropic, github:work/);
    await screenshot(adminPage, "agents-edit-scope");
    await adminPage.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    expect(await edit.evaluate((element) => element === document.activeElement)).toBe(true);
    expect((await getAgent(t.client, "claude")).scope).toEqual(["anthropic", "openai:work"]);

    await edit.click();
    await dialog.getByLabel("Providers and connections", { exact: true }).fill("anthropic, github:work");
    await dialog.getByRole("button", { name: "Save scope" }).click();
    await adminPage.getByText("claude may now use: anthropic, github:work.").waitFor();
    expect((await getAgent(t.client, "claude")).scope).toEqual(["anthropic", "github:work"]);

    // The same request without the page's CSRF token is refused.
    const forged = await adminPage.evaluate(async () => {
      const response = await fetch("/api/agents/claude/scope", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ scope: null }),
      });
      return response.status;
    });
    expect(forged).toBe(403);
    expect((await getAgent(t.client, "claude")).scope).toEqual(["anthropic", "github:work"]);
  });

  it("links to the audit log filtered by the agent", async () => {
    await adminPage.getByRole("link", { name: "Audit events of claude" }).click();
    await adminPage.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
    expect(new URL(adminPage.url()).search).toBe("?identity=claude");
    await adminPage.getByText("Only the events of").waitFor();
    await adminPage.locator("tbody tr").first().waitFor();
    const identities = await adminPage.locator("tbody td[data-label='Identity']").allInnerTexts();
    expect(identities.length).toBeGreaterThan(0);
    expect(new Set(identities)).toEqual(new Set(["claude"]));
    await screenshot(adminPage, "agents-audit-filtered");
    await adminPage.goBack();
    await adminPage.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
  });

  it("revokes an agent after confirmation; its next request is refused", async () => {
    await adminPage.getByRole("button", { name: "Revoke claude" }).click();
    const confirm = adminPage.getByRole("dialog", { name: "Revoke claude?" });
    await confirm.waitFor();
    await screenshot(adminPage, "agents-confirm-revoke");
    await confirm.getByRole("button", { name: "Revoke" }).click();
    const card = adminPage.getByRole("region", { name: "claude" });
    await card.getByText("Revoked", { exact: true }).first().waitFor();
    expect(await card.getByRole("button", { name: /Revoke/ }).count()).toBe(0);
    const record: AgentRecord = await getAgent(t.client, "claude");
    expect(record.revoked_at).not.toBeNull();
    const refused = await claude.get("/api/connections").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AuthenticationFailedError);
    expect(pageErrors).toEqual([]);
  });

  it("shows a user only their own agents and their scope", async () => {
    const user = await newContext(browser, { colorScheme: "dark" });
    const page = await user.newPage();
    watch(page);
    await page.goto(`${t.daemon.url}/agents`);
    await page.getByRole("tab", { name: "Create account" }).click();
    await page.getByLabel("Email").fill("user@example.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
    await page.getByText("No agents yet").waitFor();
    const me = await page.evaluate(
      async () => (await (await fetch("/api/auth/me")).json()) as { principal_id: string },
    );
    const researcher = await identity("researcher", false);
    await t.daemon.context.identities.claim("researcher", me.principal_id, new Date());
    await setAgentScope(t.client, "researcher", ["openai"]);
    await requests(researcher, [["openai", "success", 4, 5]]);

    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
    expect(await page.getByText("Your agents", { exact: true }).isVisible()).toBe(true);
    const cards = page.locator("section.agent-card h2");
    expect(await cards.allInnerTexts()).toEqual(["researcher"]);
    const card = page.getByRole("region", { name: "researcher" });
    expect(await card.getByRole("list", { name: "researcher may use" }).innerText()).toBe("openai");
    expect(
      (await card.getByRole("table").getByRole("row").allInnerTexts()).map((row) =>
        row.replace(/\s+/g, " ").trim(),
      ),
    ).toEqual(["Provider Chart 7 days Failed 24 h", "OpenAI 4 0 4"]);
    await screenshot(page, "agents-user-desktop-dark");
    await screenshotVariants(page, "agents-user");
    // The admin's page lists the user's agent too, under the user's account.
    await adminPage.reload();
    const theirs = adminPage.getByRole("region", { name: "researcher" });
    expect(await theirs.innerText()).toContain(me.principal_id);
    expect(pageErrors).toEqual([]);
    await user.close();
  });
});
