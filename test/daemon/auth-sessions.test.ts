import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection } from "../../src/api/connections.ts";
import {
  ConnectionNotFoundError,
  InvalidInputError,
  NotFoundError,
  OperationNotAllowedError,
} from "../../src/core/errors.ts";
import {
  loginWithApiKey,
  signedFetch,
  startTestDaemon,
  type TestDaemon,
  type TestIdentity,
} from "../support/daemon.ts";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

const openaiKey = () => `sk-test-${randomBytes(12).toString("hex")}`;
const OPENAI_HINT = "starts with sk- (project keys: sk-proj-)";
let connectionCounter = 0;
const freshName = () => `c${++connectionCounter}`;

async function start(connection = freshName(), provider = "openai", client = t.client) {
  return client.post<AuthSession>("/api/auth/sessions", { provider, connection });
}

const read = (session: AuthSession, client = t.client, query = "") =>
  client.get<AuthSession>(`/api/auth/sessions/${session.session_id}${query}`);
const input = (session: AuthSession, apiKey: string, client = t.client) =>
  client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/input`, { api_key: apiKey });
const stored = (provider: string, connection: string) =>
  t.client.get<Connection>(`/api/connections/${provider}/${connection}?reveal=true`);

/** The page path (and token) from a session's next.url, as a browser would open it. */
function pagePath(session: AuthSession): string {
  const url = new URL(session.next!.url);
  return `${url.pathname}${url.search}`;
}

interface FormFields {
  action: string;
  method: string;
  enctype: string | undefined;
  token: string;
  csrf: string;
  fields: string[];
}

/** Reads the form the way a browser would submit it. */
function parseForm(html: string): FormFields {
  const form = /<form([^>]*)>([\s\S]*?)<\/form>/.exec(html);
  expect(form, "the page has a form").toBeTruthy();
  const attribute = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1];
  const inputs = [...form![2]!.matchAll(/<input([^>]*)>/g)].map((match) => match[1]!);
  const fieldValue = (name: string) => {
    const tag = inputs.find((candidate) => attribute(candidate, "name") === name);
    return tag === undefined ? undefined : attribute(tag, "value");
  };
  return {
    action: attribute(form![1]!, "action")!,
    method: attribute(form![1]!, "method")!,
    enctype: attribute(form![1]!, "enctype"),
    token: fieldValue("token")!,
    csrf: fieldValue("csrf")!,
    fields: inputs.map((tag) => attribute(tag, "name")!),
  };
}

async function openPage(session: AuthSession) {
  const response = await fetch(`${t.daemon.url}${pagePath(session)}`);
  return { response, html: await response.text() };
}

async function postForm(
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = { origin: t.daemon.url, "sec-fetch-site": "same-origin" },
) {
  const response = await fetch(`${t.daemon.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  return { response, html: await response.text() };
}

describe("POST /api/auth/sessions", () => {
  it("answers 201 with the browser link for an API-key provider", async () => {
    const response = await signedFetch<AuthSession>(t.daemon.url, t.identity, "POST", "/api/auth/sessions", {
      provider: "openai",
      connection: "first",
    });
    expect(response.status).toBe(201);
    const session = response.body;
    expect(session).toMatchObject({
      session_id: expect.stringMatching(/^ses_/),
      provider: "openai",
      connection: "first",
      flow: "api_key",
      status: "waiting_for_user",
      next: { type: "open_url" },
    });
    const url = new URL(session.next!.url);
    expect(`${url.origin}`).toBe(t.daemon.url);
    expect(url.pathname).toBe(`/api/auth/sessions/${session.session_id}/input`);
    expect(url.searchParams.get("token")).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(Date.parse(session.expires_at) - Date.parse(session.created_at)).toBe(10 * 60 * 1000);
    expect(await read(session)).toEqual(session);
  });

  it("defaults the connection name to default", async () => {
    const session = await t.client.post<AuthSession>("/api/auth/sessions", { provider: "anthropic" });
    expect(session.connection).toBe("default");
  });

  it("refuses an unknown provider, a flow the provider cannot use, and a bad connection name", async () => {
    await expect(start("x", "opnai")).rejects.toThrow(/did you mean/);
    await expect(
      t.client.post("/api/auth/sessions", { provider: "openai", flow: "pkce" }),
    ).rejects.toBeInstanceOf(InvalidInputError);
    // GitHub names no registration endpoint: no dynamic registration.
    await expect(
      t.client.post("/api/auth/sessions", { provider: "github", flow: "dcr_pkce" }),
    ).rejects.toThrow(/supports device_code$/);
    await expect(
      t.client.post("/api/auth/sessions", { provider: "openai", connection: "bad name!" }),
    ).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe("API key input as JSON", () => {
  it("completes the session for the identity that started it", async () => {
    const session = await start();
    const key = openaiKey();
    const done = await input(session, key);
    expect(done).toMatchObject({ session_id: session.session_id, status: "completed" });
    expect(done.next).toBeUndefined();
    expect(JSON.stringify(done)).not.toContain(key);
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });
    expect((await read(session)).status).toBe("completed");
    const { events } = await t.daemon.context.audit.query({ event: "provider.login" });
    expect(events.find((event) => event.connection === session.connection)).toMatchObject({
      status: "success",
      provider: "openai",
      identity: t.identity.handle,
    });
  });

  it("refuses a key in the wrong format with the provider's hint and keeps waiting", async () => {
    const session = await start();
    const error = await input(session, "pk-not-an-openai-key").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toContain(OPENAI_HINT);
    expect((error as Error).message).not.toContain("pk-not-an-openai-key");
    await expect(input(session, "   ")).rejects.toThrow(/empty/);
    await expect(input(session, "sk-two words")).rejects.toThrow(/spaces or control characters/);
    expect(await read(session)).toMatchObject({ status: "waiting_for_user", next: { type: "open_url" } });
    await expect(stored("openai", session.connection)).rejects.toBeInstanceOf(ConnectionNotFoundError);

    const key = openaiKey();
    expect((await input(session, `  ${key}\n`)).status).toBe("completed");
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });
  });

  it("refuses input once the session has completed", async () => {
    const session = await start();
    const key = openaiKey();
    await input(session, key);
    const error = await input(session, openaiKey()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OperationNotAllowedError);
    expect((error as Error).message).toMatch(/already completed/);
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });
  });

  describe("another identity", () => {
    let other: TestIdentity;
    beforeAll(async () => {
      other = await t.newUser();
    });

    it("cannot read the session, post its input, or open it without the token", async () => {
      const session = await start();
      const readError = await read(session, other.client).catch((caught: unknown) => caught);
      expect(readError).toBeInstanceOf(NotFoundError);
      expect((readError as Error).message).toMatch(/only the identity that started it/);
      await expect(input(session, openaiKey(), other.client)).rejects.toBeInstanceOf(NotFoundError);
      expect((await read(session)).status).toBe("waiting_for_user");
      await expect(stored("openai", session.connection)).rejects.toBeInstanceOf(ConnectionNotFoundError);
      expect(await other.client.get<Connection[]>("/api/connections")).toEqual([]);
    });

    it("even of the same principal cannot read it", async () => {
      const sibling = await t.newIdentity();
      const session = await start();
      await expect(read(session, sibling.client)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  it("answers an unknown session id with NotFoundError", async () => {
    const error = await t.client.get("/api/auth/sessions/ses_unknown").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NotFoundError);
  });
});

describe("long poll", () => {
  it("answers ?wait=5 as soon as the browser completes the session", async () => {
    const session = await start();
    const page = parseForm((await openPage(session)).html);
    const started = performance.now();
    const waiting = read(session, t.client, "?wait=5");
    let answeredEarly = false;
    void waiting.then(() => {
      answeredEarly = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(answeredEarly, "the long poll waits for a change").toBe(false);
    const key = openaiKey();
    const posted = await postForm(page.action, { token: page.token, csrf: page.csrf, api_key: key });
    expect(posted.response.status).toBe(200);
    const answer = await waiting;
    const elapsed = performance.now() - started;
    expect(elapsed).toBeLessThan(2_000);
    // The change it wakes on may be the brief `processing` step; the next read is final.
    expect(["processing", "completed"]).toContain(answer.status);
    expect((await read(session, t.client, "?wait=5")).status).toBe("completed");
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });
  });

  it("with after=<revision> answers at once when the session changed since, and waits when it has not", async () => {
    const session = await start();
    const opened = session.revision;
    const page = parseForm((await openPage(session)).html);
    // A change the client has not seen yet, made before it asks.
    expect(
      (await postForm(page.action, { token: page.token, csrf: page.csrf, api_key: openaiKey() })).response
        .status,
    ).toBe(200);
    const started = performance.now();
    const answer = await read(session, t.client, `?wait=20&after=${opened}`);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(answer.revision).toBeGreaterThan(opened);

    const other = await start();
    const waited = performance.now();
    expect((await read(other, t.client, `?wait=1&after=${other.revision}`)).status).toBe("waiting_for_user");
    expect(performance.now() - waited).toBeGreaterThanOrEqual(900);
  });

  it("answers a finished session at once", async () => {
    const session = await start();
    await input(session, openaiKey());
    const started = performance.now();
    expect((await read(session, t.client, "?wait=5")).status).toBe("completed");
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("the browser bridge", () => {
  it("serves a self-contained form with strict security headers", async () => {
    const session = await start();
    const { response, html } = await openPage(session);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("content-security-policy")).toMatch(/^default-src 'none'/);
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(response.headers.get("content-security-policy")).toContain("form-action 'self'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("referrer-policy")).toBe("same-origin");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(html).toContain("Connect OpenAI");
    expect(html).toContain(OPENAI_HINT);
    expect(html).not.toMatch(/<script/i);

    const docs = (await t.client.get<{ docs_url: string }>("/api/providers/openai")).docs_url;
    const external = [...html.matchAll(/\b(?:src|href)\s*=\s*"(https?:[^"]*)"/gi)].map((match) => match[1]);
    expect(external).toEqual([docs]);
    expect(html).not.toMatch(/\bsrc\s*=/i);

    const form = parseForm(html);
    expect(form.method).toBe("post");
    expect(form.action).toBe(`/api/auth/sessions/${session.session_id}/input`);
    // No enctype: a browser posts application/x-www-form-urlencoded.
    expect(form.enctype ?? "application/x-www-form-urlencoded").toBe("application/x-www-form-urlencoded");
    expect(form.fields).toEqual(["token", "csrf", "api_key"]);
    expect(form.token).toBe(new URL(session.next!.url).searchParams.get("token"));
    expect(form.csrf).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(form.csrf).not.toBe(form.token);
  });

  it("answers a wrong or missing token with a 401 page", async () => {
    const session = await start();
    for (const query of ["?token=wrong", "", `?token=${"A".repeat(32)}`]) {
      const response = await fetch(`${t.daemon.url}/api/auth/sessions/${session.session_id}/input${query}`);
      expect(response.status).toBe(401);
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
      expect(response.headers.get("content-security-policy")).toMatch(/^default-src 'none'/);
      const html = await response.text();
      expect(html).toContain("This login cannot continue");
      expect(html).toContain("open the link svc printed");
      expect(html).not.toContain("<form");
    }
    // Another session's token opens nothing either.
    const other = await start();
    const otherToken = new URL(other.next!.url).searchParams.get("token");
    const crossed = await fetch(
      `${t.daemon.url}/api/auth/sessions/${session.session_id}/input?token=${otherToken}`,
    );
    expect(crossed.status).toBe(401);
  });

  it("stores the key from the form and shows a success page; the form cannot be used again", async () => {
    const session = await start();
    const form = parseForm((await openPage(session)).html);
    const key = openaiKey();
    const posted = await postForm(form.action, { token: form.token, csrf: form.csrf, api_key: key });
    expect(posted.response.status).toBe(200);
    expect(posted.response.headers.get("cache-control")).toBe("no-store");
    expect(posted.html).toContain("OpenAI connected");
    expect(posted.html).not.toContain(key);
    expect((await read(session)).status).toBe("completed");
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });

    const reopened = await openPage(session);
    expect(reopened.response.status).toBe(200);
    expect(reopened.html).toContain("OpenAI connected");
    expect(reopened.html).not.toContain("<form");

    const replay = await postForm(form.action, { token: form.token, csrf: form.csrf, api_key: openaiKey() });
    expect(replay.response.status).toBe(403);
    expect(replay.html).toMatch(/already completed/);
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });
  });

  it("re-renders the form with the hint (400) for a key in the wrong format", async () => {
    const session = await start();
    const form = parseForm((await openPage(session)).html);
    const posted = await postForm(form.action, {
      token: form.token,
      csrf: form.csrf,
      api_key: "definitely-not-a-key",
    });
    expect(posted.response.status).toBe(400);
    expect(posted.response.headers.get("content-security-policy")).toMatch(/^default-src 'none'/);
    expect(posted.html).toMatch(
      /<p class="error" role="alert">[^<]*starts with sk- \(project keys: sk-proj-\)/,
    );
    expect(posted.html).not.toContain("definitely-not-a-key");
    const again = parseForm(posted.html);
    expect(again.csrf).toBe(form.csrf);
    expect((await read(session)).status).toBe("waiting_for_user");

    const key = openaiKey();
    const fixed = await postForm(again.action, { token: again.token, csrf: again.csrf, api_key: key });
    expect(fixed.response.status).toBe(200);
    expect((await stored("openai", session.connection)).credential).toMatchObject({ api_key: key });
  });

  it("refuses a post with a wrong CSRF token, a cross-site Origin or Sec-Fetch-Site, storing nothing", async () => {
    const session = await start();
    const form = parseForm((await openPage(session)).html);
    const fields = { token: form.token, csrf: form.csrf, api_key: openaiKey() };
    const refusals = [
      await postForm(form.action, { ...fields, csrf: "wrong" }),
      await postForm(form.action, { token: form.token, api_key: fields.api_key }),
      await postForm(form.action, { ...fields, token: "wrong" }),
      await postForm(form.action, fields, { origin: "https://evil.example" }),
      await postForm(form.action, fields, { origin: "null" }),
      await postForm(form.action, fields, { origin: t.daemon.url, "sec-fetch-site": "cross-site" }),
      await postForm(form.action, fields, { "sec-fetch-site": "cross-site" }),
    ];
    for (const [index, refused] of refusals.entries()) {
      // A wrong token or CSRF value is an authentication failure; a foreign origin is not allowed at all.
      expect(refused.response.status).toBe(index < 3 ? 401 : 403);
      expect(refused.response.headers.get("content-type")).toMatch(/^text\/html/);
      expect(refused.html).not.toContain(fields.api_key);
    }
    expect(refusals[0]!.html).toMatch(/the form is stale or was not served by svc/);
    expect(refusals[1]!.html).toMatch(/the form is stale or was not served by svc/);
    expect(refusals[3]!.html).toMatch(/must come from a page svc served/);
    expect((await read(session)).status).toBe("waiting_for_user");
    await expect(stored("openai", session.connection)).rejects.toBeInstanceOf(ConnectionNotFoundError);

    // The genuine page still works afterwards.
    expect((await postForm(form.action, fields)).response.status).toBe(200);
  });
});

describe("cancel", () => {
  it("ends a waiting session for its owner only; its page then shows why, and a key is refused", async () => {
    const session = await start();
    const other = await t.newIdentity();
    await expect(other.client.post(`/api/auth/sessions/${session.session_id}/cancel`)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    const cancelled = await t.client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/cancel`);
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.next).toBeUndefined();
    const page = await openPage(session);
    expect(page.response.status).toBe(403);
    expect(page.html).toContain("the login was cancelled");
    await expect(input(session, openaiKey())).rejects.toBeInstanceOf(OperationNotAllowedError);
    await expect(stored("openai", session.connection)).rejects.toBeInstanceOf(ConnectionNotFoundError);
  });
});

describe("after a daemon restart", () => {
  it("answers an old session id with NotFoundError that mentions the restart", async () => {
    const session = await start();
    const completed = await loginWithApiKey(t.client, "openai", openaiKey(), { connection: freshName() });
    t = await t.restart();
    for (const id of [session.session_id, completed.session_id]) {
      const error = await t.client.get(`/api/auth/sessions/${id}`).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as Error).message).toMatch(/daemon restarted/);
    }
    await expect(input(session, openaiKey())).rejects.toThrow(/daemon restarted/);
    const page = await fetch(`${t.daemon.url}${pagePath(session)}`);
    expect(page.status).toBe(404);
    expect(await page.text()).toMatch(/daemon restarted/);
    expect((await stored("openai", completed.connection)).status).toBe("active");
  });
});

describe("shutdown during a long poll", () => {
  it("answers the waiting client at once instead of holding the daemon open", async () => {
    const own = await startTestDaemon();
    try {
      const session = await own.client.post<AuthSession>("/api/auth/sessions", { provider: "openai" });
      const polling = own.client.get<AuthSession>(`/api/auth/sessions/${session.session_id}?wait=20`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = performance.now();
      await own.close();
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(await polling).toMatchObject({ session_id: session.session_id, status: "waiting_for_user" });
    } finally {
      await own.stop();
    }
  });
});
