import { describe, expect, it } from "vitest";
import { ProxyCredential } from "./proxy-credential.ts";

const basic = (userinfo: string) => `Basic ${Buffer.from(userinfo).toString("base64")}`;

describe("ProxyCredential", () => {
  it("puts the credential in the proxy URL's userinfo, where HTTP clients read it", () => {
    const credential = new ProxyCredential("t0ken");
    expect(credential.embedIn("http://127.0.0.1:4123")).toBe("http://svc:t0ken@127.0.0.1:4123");
    const url = new URL(credential.embedIn("http://127.0.0.1:4123"));
    expect(credential.accepts(basic(`${url.username}:${url.password}`))).toBe(true);
  });

  it("accepts the Basic scheme in any case, and nothing else", () => {
    const credential = new ProxyCredential("t0ken");
    expect(credential.accepts(basic("svc:t0ken").replace("Basic", "bAsIc"))).toBe(true);
    for (const header of [
      undefined,
      "",
      basic("svc:t0ken2"),
      basic("svc:t0ke"),
      basic("other:t0ken"),
      `Bearer ${Buffer.from("svc:t0ken").toString("base64")}`,
      `${basic("svc:t0ken")} extra`,
      [basic("svc:t0ken")],
    ])
      expect(credential.accepts(header), String(header)).toBe(false);
  });

  it("is random per run: two proxies never share a credential", () => {
    const one = new URL(new ProxyCredential().embedIn("http://127.0.0.1:1")).password;
    const two = new URL(new ProxyCredential().embedIn("http://127.0.0.1:1")).password;
    expect(one).toHaveLength(43);
    expect(one).not.toBe(two);
  });
});
