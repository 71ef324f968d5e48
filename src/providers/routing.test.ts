import { describe, expect, it } from "vitest";
import { loadBundledProviders } from "./catalogue.ts";
import { decideRoute, oauthEndpoints, type RoutableProvider, RouteTable } from "./routing.ts";

function provider(
  name: string,
  api_url: string | string[],
  oauth?: RoutableProvider["oauth"],
): RoutableProvider {
  return { name, api_url, oauth };
}

function oauth(fields: Partial<NonNullable<RoutableProvider["oauth"]>>): RoutableProvider["oauth"] {
  return { scopes: [], scope_separator: " ", pkce: true, token_auth_method: "none", ...fields };
}

const all = () => true;
const decide = (table: RouteTable, url: string, connected: (name: string) => boolean = all) =>
  decideRoute(table, new URL(url), connected);

/** Whether one provider with these `api_url` entries routes the URL (the "api_url matching" rules). */
function matches(api_url: string | string[], url: string, baseUrl?: string): boolean {
  const table = new RouteTable([{ provider: provider("p", api_url), baseUrls: baseUrl ? [baseUrl] : [] }]);
  return table.candidates(new URL(url)).length > 0;
}

describe("api_url entries", () => {
  it("match bare hosts on https only, with the default or given port", () => {
    expect(matches("api.github.com", "https://api.github.com/repos/a/b")).toBe(true);
    expect(matches("api.github.com", "http://api.github.com/repos")).toBe(false);
    expect(matches("api.github.com", "https://evil.api.github.com.example/")).toBe(false);
    expect(matches("api.github.com", "https://api.github.com:8443/")).toBe(false);
    expect(matches("localhost:8443", "https://localhost:8443/x")).toBe(true);
  });

  it("match URL prefixes at a path segment boundary, on the same scheme, host and port", () => {
    expect(matches("https://slack.com/api", "https://slack.com/api/chat.postMessage")).toBe(true);
    expect(matches("https://slack.com/api", "https://slack.com/api")).toBe(true);
    expect(matches("https://slack.com/api", "https://slack.com/apis")).toBe(false);
    expect(matches("https://slack.com/api", "https://slack.com/")).toBe(false);
    expect(matches("https://mcp.linear.app", "https://mcp.linear.app/mcp")).toBe(true);
    expect(matches("http://127.0.0.1:9000/v1", "http://127.0.0.1:9000/v1/x")).toBe(true);
    expect(matches("http://127.0.0.1:9000/v1", "http://127.0.0.1:9001/v1/x")).toBe(false);
  });

  it("test regex entries against the full URL", () => {
    const entry = String.raw`regex:^https://[a-z0-9-]+\.googleapis\.com/`;
    expect(matches(entry, "https://www.googleapis.com/drive/v3/files?q=1")).toBe(true);
    expect(matches(entry, "https://googleapis.com.evil.example/")).toBe(false);
  });

  it("resolve {base_url} entries with a connection's base URL, and match nothing without one", () => {
    const entries = ["{base_url}/api/v4", "example.com"];
    expect(
      matches(entries, "https://gitlab.example.org/api/v4/projects", "https://gitlab.example.org/"),
    ).toBe(true);
    expect(matches(entries, "https://gitlab.example.org/api/v4/projects")).toBe(false);
    expect(matches(entries, "https://example.com/anything")).toBe(true);
  });
});

describe("RouteTable", () => {
  it("matches a bare host on https and its default port only", () => {
    const table = new RouteTable([{ provider: provider("a", "api.a.com") }]);
    expect(decide(table, "https://api.a.com/v1/x")).toEqual({
      kind: "match",
      provider: "a",
      entry: "api.a.com",
    });
    expect(decide(table, "https://api.a.com:443/")).toMatchObject({ kind: "match" });
    expect(decide(table, "http://api.a.com/v1")).toEqual({ kind: "none" });
    expect(decide(table, "https://api.a.com:8443/")).toEqual({ kind: "none" });
    expect(decide(table, "https://evil-api.a.com/")).toEqual({ kind: "none" });
    expect(decide(table, "https://api.a.com.evil.com/")).toEqual({ kind: "none" });
  });

  it("matches a URL prefix only at a path-segment boundary", () => {
    const table = new RouteTable([{ provider: provider("s", "https://slack.com/api") }]);
    expect(decide(table, "https://slack.com/api")).toMatchObject({ kind: "match" });
    expect(decide(table, "https://slack.com/api/chat.postMessage")).toMatchObject({ kind: "match" });
    expect(decide(table, "https://slack.com/apix")).toEqual({ kind: "none" });
    expect(decide(table, "https://slack.com/")).toEqual({ kind: "none" });
  });

  it("prefers the longer path prefix, then a host, over a regex", () => {
    const table = new RouteTable([
      { provider: provider("regex", "regex:^https://([a-z]+\\.)?example\\.com/") },
      { provider: provider("host", "api.example.com") },
      { provider: provider("v2", "https://api.example.com/v2") },
      { provider: provider("v2beta", "https://api.example.com/v2/beta") },
    ]);
    expect(decide(table, "https://api.example.com/v2/beta/x")).toMatchObject({ provider: "v2beta" });
    expect(decide(table, "https://api.example.com/v2/other")).toMatchObject({ provider: "v2" });
    expect(decide(table, "https://api.example.com/v1")).toMatchObject({ provider: "host" });
    expect(decide(table, "https://www.example.com/")).toMatchObject({ provider: "regex" });
  });

  it("only providers with a connection compete; unconnected matches are reported", () => {
    const table = new RouteTable([
      { provider: provider("github", ["api.github.com"]) },
      { provider: provider("github-token", ["api.github.com"]) },
    ]);
    expect(decide(table, "https://api.github.com/user", () => false)).toEqual({
      kind: "unconnected",
      providers: ["github", "github-token"],
    });
    expect(decide(table, "https://api.github.com/user", (name) => name === "github-token")).toMatchObject({
      kind: "match",
      provider: "github-token",
    });
    expect(decide(table, "https://api.github.com/user")).toEqual({
      kind: "ambiguous",
      providers: ["github", "github-token"],
    });
  });

  it("a less specific connected provider wins over a more specific unconnected one", () => {
    const table = new RouteTable([
      { provider: provider("broad", "api.x.com") },
      { provider: provider("narrow", "https://api.x.com/special") },
    ]);
    expect(decide(table, "https://api.x.com/special/1", (name) => name === "broad")).toMatchObject({
      provider: "broad",
    });
  });

  it("never routes any provider's OAuth endpoints, even when an api_url covers them", () => {
    const table = new RouteTable([
      {
        provider: provider(
          "g",
          "regex:^https://[a-z0-9-]+\\.googleapis\\.com/",
          oauth({
            token_url: "https://oauth2.googleapis.com/token",
            revocation_url: "https://oauth2.googleapis.com/revoke",
          }),
        ),
      },
    ]);
    expect(decide(table, "https://oauth2.googleapis.com/token")).toEqual({ kind: "oauth_endpoint" });
    expect(decide(table, "https://oauth2.googleapis.com/token/")).toEqual({ kind: "oauth_endpoint" });
    expect(decide(table, "https://oauth2.googleapis.com/revoke?token=x")).toEqual({ kind: "oauth_endpoint" });
    expect(decide(table, "https://www.googleapis.com/drive/v3/files")).toMatchObject({ kind: "match" });
  });

  it("resolves {base_url} entries and endpoints with each known base URL, and skips them without one", () => {
    const gitlab = provider(
      "gitlab",
      "{base_url}/api",
      oauth({ token_url: "{base_url}/oauth/token", base_url: "https://gitlab.com" }),
    );
    const table = new RouteTable([{ provider: gitlab, baseUrls: ["https://git.corp.example"] }]);
    expect(decide(table, "https://gitlab.com/api/v4/user")).toMatchObject({ provider: "gitlab" });
    expect(decide(table, "https://git.corp.example/api/v4/user")).toMatchObject({ provider: "gitlab" });
    expect(decide(table, "https://git.corp.example/oauth/token")).toEqual({ kind: "oauth_endpoint" });
    const noBase = provider("okta", "{base_url}/api/v1", oauth({ token_url: "{base_url}/oauth2/v1/token" }));
    const empty = new RouteTable([{ provider: noBase }]);
    expect(decide(empty, "https://x.okta.com/api/v1/users")).toEqual({ kind: "none" });
    expect(oauthEndpoints(noBase)).toEqual([]);
    expect(oauthEndpoints(noBase, "https://x.okta.com")).toEqual(["https://x.okta.com/oauth2/v1/token"]);
  });

  it("routesHost says which hosts a proxy must intercept: hosts, prefixes' origins and regex hosts", () => {
    const table = new RouteTable([
      { provider: provider("h", "api.h.com") },
      { provider: provider("p", "https://slack.com/api") },
      { provider: provider("r", "regex:^https://[a-z0-9-]+\\.googleapis\\.com/drive/") },
      { provider: provider("loose", "regex:example\\.org") },
    ]);
    expect(table.routesHost("api.h.com")).toBe(true);
    expect(table.routesHost("api.h.com", 8443)).toBe(false);
    expect(table.routesHost("slack.com")).toBe(true);
    expect(table.routesHost("www.googleapis.com")).toBe(true);
    expect(table.routesHost("googleapis.com.evil.net")).toBe(false);
    expect(table.routesHost("www.example.org")).toBe(true);
    expect(table.routesHost("example.com")).toBe(false);
    expect(table.routesHost("::1")).toBe(false);
  });

  it("routes the bundled catalogue's best-known APIs to the expected provider", () => {
    const table = new RouteTable(loadBundledProviders().map((p) => ({ provider: p })));
    const expectations: Array<[string, string]> = [
      ["https://api.openai.com/v1/models", "openai"],
      ["https://api.anthropic.com/v1/messages", "anthropic"],
      ["https://slack.com/api/auth.test", "slack"],
      ["https://graph.microsoft.com/v1.0/me", "microsoft"],
    ];
    for (const [url, name] of expectations) {
      expect(decide(table, url, (candidate) => candidate === name)).toMatchObject({
        kind: "match",
        provider: name,
      });
    }
    expect(decide(table, "https://github.com/login/oauth/access_token")).toEqual({ kind: "oauth_endpoint" });
    expect(decide(table, "https://example.org/")).toEqual({ kind: "none" });
  });
});
