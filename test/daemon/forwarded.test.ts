import { afterEach, describe, expect, it } from "vitest";
import { parseAddressList } from "../../src/cli/commands/daemon.ts";
import { startTestDaemon, type TestDaemon } from "../support/daemon.ts";

/** A one-time dashboard link asked for with these headers, and the cookie it sets. */
async function linkAndCookie(t: TestDaemon, headers: Record<string, string>) {
  const { url } = await t.client.post<{ url: string }>("/api/session", {});
  const opened = await fetch(`${t.daemon.url}${new URL(url).pathname}`, { headers, redirect: "manual" });
  return { url, cookie: opened.headers.get("set-cookie") ?? "" };
}

describe("X-Forwarded-* behind a reverse proxy", () => {
  let t: TestDaemon | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  it("ignores X-Forwarded-Proto from an address that is not a trusted proxy", async () => {
    t = await startTestDaemon();
    const { cookie } = await linkAndCookie(t, { "x-forwarded-proto": "https" });
    expect(cookie).toMatch(/^svc_session=/);
    expect(cookie).not.toContain("Secure");
  });

  it("believes a trusted proxy that the client spoke https: the cookie is Secure", async () => {
    t = await startTestDaemon({}, { config: { trustedProxies: ["127.0.0.1/32", "::1"] } });
    expect((await linkAndCookie(t, { "x-forwarded-proto": "https" })).cookie).toContain("; Secure");
    expect((await linkAndCookie(t, {})).cookie).not.toContain("Secure");
  });

  it("hands out links under the public URL, whatever Host the request came with", async () => {
    const publicUrl = "https://svc.example.com";
    t = await startTestDaemon({}, { config: { publicUrl } });
    const { url, cookie } = await linkAndCookie(t, {});
    expect(url.startsWith(`${publicUrl}/auth/link/`)).toBe(true);
    expect(cookie).toContain("; Secure");
  });

  it("accepts IPs and CIDR ranges and names a bad entry", () => {
    expect(parseAddressList(" 10.0.0.5, 10.1.0.0/16,::1, fd00::/8 ")).toEqual([
      "10.0.0.5",
      "10.1.0.0/16",
      "::1",
      "fd00::/8",
    ]);
    expect(parseAddressList("")).toEqual([]);
    for (const bad of ["10.0.0", "10.0.0.0/33", "10.0.0.0/", "proxy.local", "1.2.3.4/8/1"]) {
      expect(() => parseAddressList(bad), bad).toThrow(`"${bad}" is not an IP address or CIDR range`);
    }
  });
});
