import { describe, expect, it } from "vitest";
import type { ProxyRoute } from "../api/credentials.ts";
import { DaemonUnavailableError } from "../core/errors.ts";
import type { DaemonClient } from "./daemon-client.ts";
import { ProviderRoutes } from "./provider-routes.ts";

function route(provider: string, apiUrl: string, connections: string[]): ProxyRoute {
  return {
    provider,
    auth_type: "api_key",
    api_url: [apiUrl],
    oauth_endpoints: [`https://${apiUrl}/oauth/token`],
    header_name: "Authorization",
    env: [],
    connections,
    default_connection: connections[0] ?? null,
  };
}

/** A daemon whose routing table is whatever `answers` holds next (an Error is thrown). */
function fakeDaemon(answers: Array<ProxyRoute[] | Error>) {
  let calls = 0;
  const client = {
    get: async () => {
      const answer = answers[Math.min(calls++, answers.length - 1)]!;
      if (answer instanceof Error) throw answer;
      return { routes: answer };
    },
  } as unknown as DaemonClient;
  return { client, calls: () => calls };
}

const url = (href: string) => new URL(href);

describe("ProviderRoutes", () => {
  it("loads once for concurrent first callers and decides among connected providers", async () => {
    const daemon = fakeDaemon([
      [route("alpha", "api.alpha.test", ["default"]), route("beta", "api.beta.test", [])],
    ]);
    const routes = new ProviderRoutes(daemon.client);
    await Promise.all([routes.ready(), routes.ready(), routes.ready()]);
    expect(daemon.calls()).toBe(1);
    expect(routes.decide(url("https://api.alpha.test/v1"))).toMatchObject({
      kind: "match",
      provider: "alpha",
    });
    expect(routes.decide(url("https://api.alpha.test/oauth/token"))).toEqual({ kind: "oauth_endpoint" });
    expect(routes.decide(url("https://api.beta.test/"))).toEqual({
      kind: "unconnected",
      providers: ["beta"],
    });
    expect(routes.routesHost("api.beta.test", 443)).toBe(true);
  });

  it("refreshes a stale table in the background and keeps the last good one when that fails", async () => {
    let now = 0;
    const daemon = fakeDaemon([
      [route("alpha", "api.alpha.test", [])],
      [route("alpha", "api.alpha.test", ["default"])],
      new DaemonUnavailableError("gone"),
    ]);
    const routes = new ProviderRoutes(daemon.client, { ttlMs: 10_000, now: () => now });
    await routes.ready();
    expect(routes.decide(url("https://api.alpha.test/")).kind).toBe("unconnected");
    now = 9_999;
    await routes.ready();
    expect(daemon.calls()).toBe(1);
    now = 10_000;
    await routes.ready();
    // The refresh runs in the background; load() joins it.
    await routes.load().catch(() => undefined);
    expect(routes.decide(url("https://api.alpha.test/")).kind).toBe("match");
    now = 30_000;
    await routes.ready();
    await new Promise((resolve) => setImmediate(resolve));
    expect(routes.decide(url("https://api.alpha.test/")).kind).toBe("match");
  });

  it("reports a daemon that cannot be reached on first use, and tries again next time", async () => {
    const daemon = fakeDaemon([
      new DaemonUnavailableError("down"),
      [route("alpha", "api.alpha.test", ["x"])],
    ]);
    const routes = new ProviderRoutes(daemon.client);
    await expect(routes.ready()).rejects.toBeInstanceOf(DaemonUnavailableError);
    await routes.ready();
    expect(routes.decide(url("https://api.alpha.test/")).kind).toBe("match");
  });
});
