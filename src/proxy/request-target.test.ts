import { describe, expect, it } from "vitest";
import { parseAuthority, pinRequestTarget } from "./request-target.ts";

const OPENAI = { host: "api.openai.com", port: 443 };
const host = (value: string) => ["Host", value];

describe("pinRequestTarget", () => {
  it("forwards an origin-form request whose Host names the CONNECT authority", () => {
    expect(pinRequestTarget("/v1/models?x=1", host("api.openai.com"), OPENAI)).toEqual({
      path: "/v1/models?x=1",
    });
  });

  it("treats case, a trailing dot and the default port as the same authority", () => {
    for (const value of ["API.OpenAI.com", "api.openai.com.", "api.openai.com:443", "Api.OpenAI.Com.:443"])
      expect(pinRequestTarget("/", host(value), OPENAI)).toEqual({ path: "/" });
    expect(pinRequestTarget("/", host("api.openai.com"), { host: "api.openai.com.", port: 443 })).toEqual({
      path: "/",
    });
  });

  it("refuses a Host naming another host or another port", () => {
    for (const value of ["evil.test", "api.openai.com:8443", "api.openai.com.evil.test", "", "a b"])
      expect(pinRequestTarget("/", host(value), OPENAI)).toHaveProperty("misdirected");
  });

  it("refuses two Host headers, even when both name the CONNECT host, and none", () => {
    expect(pinRequestTarget("/", [...host("api.openai.com"), ...host("evil.test")], OPENAI)).toEqual({
      misdirected: "expected one Host header, got 2",
    });
    expect(
      pinRequestTarget("/", [...host("api.openai.com"), ...host("api.openai.com")], OPENAI),
    ).toHaveProperty("misdirected");
    expect(pinRequestTarget("/", ["Accept", "*/*"], OPENAI)).toHaveProperty("misdirected");
  });

  it("reduces an absolute-form target for the same authority to its path, and refuses another", () => {
    expect(pinRequestTarget("https://api.openai.com/v1?a=b", host("api.openai.com"), OPENAI)).toEqual({
      path: "/v1?a=b",
    });
    expect(pinRequestTarget("https://API.openai.com.:443/x", host("api.openai.com"), OPENAI)).toEqual({
      path: "/x",
    });
    for (const target of [
      "https://evil.test/x",
      "http://api.openai.com/x",
      "https://api.openai.com:8443/x",
      "https://user:pass@api.openai.com/x",
      "ftp://api.openai.com/x",
      "evil.test:443",
    ])
      expect(pinRequestTarget(target, host("api.openai.com"), OPENAI), target).toHaveProperty("misdirected");
  });

  it("pins IPv6 authorities with their brackets", () => {
    const v6 = { host: "::1", port: 8443 };
    expect(pinRequestTarget("/", host("[::1]:8443"), v6)).toEqual({ path: "/" });
    expect(pinRequestTarget("/", host("[::2]:8443"), v6)).toHaveProperty("misdirected");
  });
});

describe("parseAuthority", () => {
  it("canonicalises host and port and refuses what is not an authority", () => {
    expect(parseAuthority("Example.COM.", 443)).toEqual({ host: "example.com", port: 443 });
    expect(parseAuthority("[::1]:80", 443)).toEqual({ host: "::1", port: 80 });
    for (const value of ["", ":443", "a:0", "a:65536", "a:b", "[::1", "a/b:1"])
      expect(parseAuthority(value, 443), value).toBeUndefined();
  });
});
