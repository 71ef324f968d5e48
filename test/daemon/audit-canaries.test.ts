import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditPageRecord } from "../../src/api/audit.ts";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { Connection } from "../../src/api/connections.ts";
import { type AuthServer, startAuthServer } from "../support/auth-server.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";
import { oauthProvider, staticClient } from "../support/oauth.ts";
import { submitBridgeForm, WebSession } from "../support/web-session.ts";

/** Every file under `dir`, recursively (database, WAL, logs, rotated logs). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : statSync(path).isFile() ? [path] : [];
  });
}

describe("audit canaries and paging", () => {
  let t: TestDaemon;
  let server: AuthServer;
  beforeAll(async () => {
    [t, server] = await Promise.all([startTestDaemon(), startAuthServer({ accessTokenTtl: 2 })]);
  });
  afterAll(async () => {
    await Promise.all([t.stop(), server.close()]);
  });

  it("plants secrets through every flow and finds none in the database, the logs or an API answer", async () => {
    const secrets: string[] = [];
    const plant = (value: string) => {
      secrets.push(value);
      return value;
    };
    const answers: string[] = [];
    const get = async (path: string) => {
      answers.push(JSON.stringify(await t.client.get(path)));
    };

    // API keys: as JSON, and through the browser form of a dashboard-started login.
    const jsonKey = plant(`sk-canary${randomBytes(20).toString("hex")}`);
    await loginWithApiKey(t.client, "openai", jsonKey);
    const browser = new WebSession(t.daemon.url);
    await browser.openLink((await t.client.post<{ url: string }>("/api/session", {})).url);
    const started = await browser.request("POST", "/api/auth/providers/anthropic/connect", { json: {} });
    const formKey = plant(`sk-ant-canary${randomBytes(20).toString("hex")}`);
    const posted = await submitBridgeForm(((await started.json()) as AuthSession).next!.url, {
      api_key: formKey,
    });
    expect(posted.status).toBe(200);
    answers.push(await posted.text());

    // OAuth: client secret through the input route, tokens through sign-in and a refresh.
    await t.client.post("/api/providers", oauthProvider("canaryoauth", server, "pkce"));
    const client = await staticClient(server, t.daemon.url);
    plant(client.client_secret!);
    const session = await t.client.post<AuthSession>("/api/auth/sessions", { provider: "canaryoauth" });
    const ready = await t.client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/input`, client);
    expect((await server.browser.authorize(ready.next!.url)).status).toBe(200);
    const first = await t.client.get<Connection>("/api/connections/canaryoauth/default?reveal=true");
    const tokens = first.credential as { access_token: string; refresh_token: string };
    plant(tokens.access_token);
    plant(tokens.refresh_token);
    await sleep(1200); // past half of the 2 s lifetime: the next resolve refreshes
    await t.client.post("/api/credentials/resolve", { provider: "canaryoauth" });
    const refreshed = await t.client.get<Connection>("/api/connections/canaryoauth/default?reveal=true");
    const rotated = refreshed.credential as { access_token: string; refresh_token: string };
    expect(rotated.access_token).not.toBe(tokens.access_token);
    plant(rotated.access_token);
    plant(rotated.refresh_token);

    // A proxy event quoting a key is stored with that field refused.
    expect(
      await t.client.post("/audit/events", {
        events: [
          {
            timestamp: new Date().toISOString(),
            event: "proxy.request",
            status: "success",
            provider: "openai",
            detail: { path: `/v1/echo/${jsonKey}` },
          },
        ],
      }),
    ).toEqual({ accepted: 1 });
    const quoted = await t.client.get<AuditPageRecord>("/api/audit/events?event=proxy.request&limit=1");
    expect(quoted.events[0]!.detail).toEqual({ path: "[refused: looks like a secret]" });

    // Lifecycle: default, logout, revoke; dashboard accounts with a password, right and wrong.
    await t.client.post("/api/connections/openai/default/default", {});
    await t.client.post("/api/connections/anthropic/default/logout", {});
    await t.client.post("/api/connections/canaryoauth/revoke", {});
    const password = plant(`canary-password-${randomBytes(8).toString("hex")}`);
    const account = new WebSession(t.daemon.url);
    expect((await account.signIn("canary@example.com", password, true)).status).toBe(200);
    expect((await new WebSession(t.daemon.url).signIn("canary@example.com", `${password}x`)).status).toBe(
      401,
    );
    plant(account.cookie!.split("=")[1]!);
    plant(account.csrf!);

    await get("/api/audit/events?limit=500");
    await get("/api/connections");
    await get("/api/providers");
    await get("/api/whoami");
    await get("/api/ready");
    const events = JSON.parse(answers[answers.length - 5]!) as AuditPageRecord;
    const kinds = new Set(events.events.map((event) => event.event));
    const viaDashboard = events.events.find(
      (e) => e.event === "provider.login" && e.provider === "anthropic",
    );
    expect(viaDashboard?.detail).toEqual({ flow: "api_key", via: "dashboard" });
    for (const kind of [
      "identity.claimed",
      "provider.login",
      "provider.refreshed",
      "provider.default_changed",
      "provider.logout",
      "provider.revoked",
      "provider.registered",
      "credential.revealed",
      "account.registered",
      "account.signed_in",
      "account.sign_in_failed",
    ]) {
      expect(kinds, kind).toContain(kind);
    }

    const files = [
      ...filesUnder(join(t.layout.home, "server")),
      ...filesUnder(join(t.layout.home, "client")),
    ];
    expect(files.some((file) => file.endsWith("svc.db"))).toBe(true);
    expect(files.some((file) => file.endsWith("svc.log"))).toBe(true);
    for (const file of files) {
      const bytes = readFileSync(file).toString("latin1");
      for (const secret of secrets)
        expect(bytes.includes(secret), `${secret.slice(0, 12)}… in ${file}`).toBe(false);
    }
    for (const answer of answers) {
      for (const secret of secrets)
        expect(answer.includes(secret), `${secret.slice(0, 12)}… in an answer`).toBe(false);
    }
  });

  it("pages 1,000 events through the API exactly once while new ones arrive", async () => {
    const batch = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({
        timestamp: new Date().toISOString(),
        event: "proxy.request",
        status: "success",
        provider: "openai",
        detail: { path: `/page/${tag}/${i}` },
      }));
    for (let i = 0; i < 2; i++) await t.client.post("/audit/events", { events: batch(500, `old${i}`) });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const query = `event=proxy.request&provider=openai&limit=97${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await t.client.get<AuditPageRecord>(`/api/audit/events?${query}`);
      seen.push(...page.events.map((event) => String(event.detail?.path)));
      cursor = page.next_cursor;
      pages++;
      await t.client.post("/audit/events", { events: batch(7, `new${pages}`) });
    } while (cursor && pages < 50);
    const old = seen.filter((path) => path.includes("/old"));
    expect(old).toHaveLength(1000);
    expect(new Set(old).size).toBe(1000);
    expect(seen.filter((path) => path.includes("/new"))).toHaveLength(0);
    expect(pages).toBe(11);
  });
});
