import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { WebSession } from "../support/web-session.ts";

const PASSWORD = "correct horse battery";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
  // The first principal (the local owner, admin) exists; this account is a second one.
  expect((await new WebSession(t.daemon.url).signIn("bob@example.com", PASSWORD, true)).status).toBe(200);
});
afterAll(async () => {
  await t.stop();
});

/** A one-time link for the local owner, as `svc dashboard` asks for it. */
async function ownerLink(next?: string): Promise<URL> {
  const { url } = await t.client.post<{ url: string }>("/api/session", next ? { next } : {});
  return new URL(url);
}

async function open(link: URL, headers: Record<string, string> = {}) {
  const response = await fetch(link, { headers, redirect: "manual" });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function cookieValue(setCookie: string | null, name: string): string | undefined {
  const match = setCookie ? new RegExp(`${name}=([^;,]+)`).exec(setCookie) : null;
  return match?.[1];
}

/** Posts the confirmation form as the page would (its hidden fields), with the given extras. */
async function confirm(
  link: URL,
  page: string,
  options: { cookie?: string; origin?: string | null; csrf?: string },
) {
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(page)?.[1];
  const form: Record<string, string> = { csrf_token: options.csrf ?? field("csrf_token") ?? "" };
  const next = field("next");
  if (next) form.next = next.replaceAll("&#x2F;", "/").replaceAll("&#47;", "/");
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (options.cookie) headers.cookie = options.cookie;
  if (options.origin !== null) headers.origin = options.origin ?? link.origin;
  const response = await fetch(`${link.origin}${link.pathname}`, {
    method: "POST",
    headers,
    body: new URLSearchParams(form).toString(),
    redirect: "manual",
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe("one-time dashboard links need the right browser", () => {
  it("signs a fresh browser in at once when the link is opened from outside any page (the CLI's own link)", async () => {
    const link = await ownerLink();
    const opened = await open(link, { "sec-fetch-site": "none" });
    expect(opened.status).toBe(303);
    expect(cookieValue(opened.headers.get("set-cookie"), "svc_session")).toBeTruthy();
  });

  it("opened cross-site, shows who the link signs in as and waits for a same-origin confirmation", async () => {
    const link = await ownerLink("/audit");
    const page = await open(link, { "sec-fetch-site": "cross-site" });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(cookieValue(page.headers.get("set-cookie"), "svc_session")).toBeUndefined();
    expect(page.text).toMatch(/not signed in/i);
    expect(page.text).toMatch(/this daemon&#39;s owner|this daemon's owner/);
    expect(page.text).toContain('method="post"');
    const csrfCookie = `svc_link_csrf=${cookieValue(page.headers.get("set-cookie"), "svc_link_csrf")}`;

    // A page elsewhere cannot complete it: no Origin, a foreign Origin, a wrong or missing token.
    expect((await confirm(link, page.text, { cookie: csrfCookie, origin: null })).status).toBe(403);
    expect((await confirm(link, page.text, { cookie: csrfCookie, origin: "http://evil.test" })).status).toBe(
      403,
    );
    expect((await confirm(link, page.text, { cookie: csrfCookie, csrf: "forged" })).status).toBe(403);
    expect((await confirm(link, page.text, {})).status).toBe(403);

    const confirmed = await confirm(link, page.text, { cookie: csrfCookie });
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.get("location")).toBe("/audit");
    const session = cookieValue(confirmed.headers.get("set-cookie"), "svc_session");
    expect(session).toBeTruthy();
    const me = await fetch(`${t.daemon.url}/api/auth/me`, { headers: { cookie: `svc_session=${session}` } });
    expect(((await me.json()) as { role: string }).role).toBe("admin");
    // Used up.
    expect((await open(link)).status).toBe(400);
  });

  it("while another account is signed in, asks first and leaves that session alone", async () => {
    const bob = new WebSession(t.daemon.url);
    expect((await bob.signIn("bob@example.com", PASSWORD)).status).toBe(200);
    const link = await ownerLink();
    const page = await open(link, { cookie: bob.cookie! });
    expect(page.status).toBe(200);
    expect(page.text).toContain("bob@example.com");
    expect(page.text).toMatch(/this daemon&#39;s owner|this daemon's owner/);
    expect(page.headers.get("set-cookie") ?? "").not.toContain("svc_session=");
    const me = await bob.request("GET", "/api/auth/me");
    expect(((await me.json()) as { email: string }).email).toBe("bob@example.com");
    // The link still works once confirmed.
    const csrfCookie = `svc_link_csrf=${cookieValue(page.headers.get("set-cookie"), "svc_link_csrf")}`;
    const confirmed = await confirm(link, page.text, { cookie: `${bob.cookie}; ${csrfCookie}` });
    expect(confirmed.status).toBe(303);
    // Bob's old session ended with the switch (no two sessions in one browser).
    expect((await bob.request("GET", "/api/auth/me")).status).toBe(401);
  });

  it("signed in as the link's own principal already, goes straight on", async () => {
    const owner = new WebSession(t.daemon.url);
    expect((await owner.openLink((await ownerLink()).toString())).status).toBe(303);
    const again = await open(await ownerLink(), { cookie: owner.cookie!, "sec-fetch-site": "none" });
    expect(again.status).toBe(303);
  });
});
