import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { connectTarget, parseConnectTo } from "./connect-to.ts";

describe("parseConnectTo", () => {
  it.each([undefined, "", " , "])("reads %j as no rules", (value) => {
    expect(parseConnectTo(value)).toEqual([]);
  });

  it("reads every field of an entry", () => {
    expect(parseConnectTo("API.Example.com:443:127.0.0.1:8443")).toEqual([
      { fromHost: "api.example.com", fromPort: 443, toHost: "127.0.0.1", toPort: 8443 },
    ]);
  });

  it("reads empty fields as any (source) or unchanged (destination)", () => {
    expect(parseConnectTo(":::")).toEqual([{}]);
    expect(parseConnectTo("::localhost:")).toEqual([{ toHost: "localhost" }]);
    expect(parseConnectTo(":443::8443")).toEqual([{ fromPort: 443, toPort: 8443 }]);
  });

  it("reads bracketed IPv6 literals on both sides", () => {
    expect(parseConnectTo("[2001:DB8::1]:443:[::1]:8443")).toEqual([
      { fromHost: "2001:db8::1", fromPort: 443, toHost: "::1", toPort: 8443 },
    ]);
  });

  it("reads comma-separated entries in order, ignoring blanks around them", () => {
    expect(parseConnectTo(" a.test:443:127.0.0.1:1001 ,, b.test::[::1]: ")).toEqual([
      { fromHost: "a.test", fromPort: 443, toHost: "127.0.0.1", toPort: 1001 },
      { fromHost: "b.test", toHost: "::1" },
    ]);
  });

  it.each([
    ["a.test:443:127.0.0.1", "it needs four colon-separated fields"],
    ["a.test", "it needs four colon-separated fields"],
    ["a.test:443:127.0.0.1:8443:9", "it needs four colon-separated fields"],
    ["::1:443:127.0.0.1:8443", "it needs four colon-separated fields"],
    ["[::1:443:127.0.0.1:8443", "it needs four colon-separated fields"],
    ["a.test:https:127.0.0.1:8443", 'port "https" is not a number'],
    ["a.test:443:127.0.0.1:-1", 'port "-1" is not a number'],
    ["a.test:443:127.0.0.1:65536", "port 65536 is out of range (1-65535)"],
    ["a.test:0:127.0.0.1:8443", "port 0 is out of range (1-65535)"],
    ["[example]:443:127.0.0.1:8443", "[example] is not an IPv6 address"],
    ["a test:443:127.0.0.1:8443", '"a test" is not a host name or IPv4 address'],
  ])("refuses %j: %s", (value, reason) => {
    const error = (() => {
      try {
        parseConnectTo(`ok.test:443::8443,${value}`);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(InvalidInputError);
    const message = (error as Error).message;
    expect(message).toContain(`SVC_PROXY_CONNECT_TO: invalid entry "${value}": ${reason}`);
    expect(message).toContain("expected HOST1:PORT1:HOST2:PORT2");
    expect(message).not.toContain("ok.test");
  });
});

describe("connectTarget", () => {
  const rules = parseConnectTo(
    [
      "api.example.com:443:127.0.0.1:8443",
      "api.example.com::127.0.0.2:",
      "[::1]:443::9443",
      ":80:localhost:8080",
    ].join(","),
  );

  it("connects to the requested target when no rule matches", () => {
    expect(connectTarget(rules, "other.test", 443)).toEqual({ host: "other.test", port: 443 });
    expect(connectTarget([], "api.example.com", 443)).toEqual({ host: "api.example.com", port: 443 });
  });

  it("uses the first matching rule", () => {
    expect(connectTarget(rules, "api.example.com", 443)).toEqual({ host: "127.0.0.1", port: 8443 });
    expect(connectTarget(rules, "api.example.com", 80)).toEqual({ host: "127.0.0.2", port: 80 });
  });

  it("matches host names case-insensitively", () => {
    expect(connectTarget(rules, "API.Example.COM", 443)).toEqual({ host: "127.0.0.1", port: 8443 });
  });

  it("matches any host on a rule without HOST1", () => {
    expect(connectTarget(rules, "plain.test", 80)).toEqual({ host: "localhost", port: 8080 });
  });

  it("keeps the requested host when HOST2 is empty, and matches IPv6 with or without brackets", () => {
    expect(connectTarget(rules, "::1", 443)).toEqual({ host: "::1", port: 9443 });
    expect(connectTarget(rules, "[::1]", 443)).toEqual({ host: "::1", port: 9443 });
    expect(connectTarget(rules, "[::1]", 8000)).toEqual({ host: "::1", port: 8000 });
  });
});
