import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { allowInScope, denyInScope, describeScope, parseScopeEntries, scopeAllows } from "./agents.ts";

describe("agent scope entries", () => {
  it("reads comma-separated, repeated lists of providers and provider:connection", () => {
    expect(parseScopeEntries(["openai,github:work", " anthropic "])).toEqual([
      "openai",
      "github:work",
      "anthropic",
    ]);
  });

  it("refuses what is not a provider or provider:connection, naming it", () => {
    for (const bad of ["", "OpenAI", "github:", ":work", "a b", "github:work:x", "x".repeat(65)]) {
      expect(() => parseScopeEntries([bad]), bad).toThrow(InvalidInputError);
    }
    expect(() => parseScopeEntries(["openai,git hub"])).toThrow(/"git hub" is not a scope entry/);
  });
});

describe("allow and deny", () => {
  it("limits an unrestricted agent to what is allowed, sorted, a provider covering its connections", () => {
    expect(allowInScope(null, ["github:work,openai"])).toEqual(["github:work", "openai"]);
    expect(allowInScope(["github:work", "openai"], ["github"])).toEqual(["github", "openai"]);
    expect(allowInScope(["github"], ["github:work", "github"])).toEqual(["github"]);
  });

  it("removes a provider with its connections, or one connection", () => {
    expect(denyInScope(["github:personal", "github:work", "openai"], ["github"])).toEqual(["openai"]);
    expect(denyInScope(["github:personal", "github:work"], ["github:work"])).toEqual(["github:personal"]);
    expect(denyInScope(["openai"], ["openai"])).toEqual([]);
  });

  it("says what to do instead of guessing: deny on an unrestricted agent, or one connection of a whole provider", () => {
    expect(() => denyInScope(null, ["openai"])).toThrow(/unrestricted; list what it may use/);
    expect(() => denyInScope(["github"], ["github:work"])).toThrow(/deny github, then allow/);
  });
});

describe("what a scope allows", () => {
  it("allows everything unrestricted, nothing when empty", () => {
    expect(scopeAllows(null, "openai", "default")).toBe(true);
    expect(scopeAllows([], "openai")).toBe(false);
  });

  it("allows a provider's connections by provider entry, or only the named connection", () => {
    const scope = ["anthropic", "github:work"];
    expect(scopeAllows(scope, "anthropic", "anything")).toBe(true);
    expect(scopeAllows(scope, "github", "work")).toBe(true);
    expect(scopeAllows(scope, "github", "personal")).toBe(false);
    // Some connection of github is allowed: the provider as a whole is usable.
    expect(scopeAllows(scope, "github")).toBe(true);
    expect(scopeAllows(scope, "openai")).toBe(false);
  });

  it("reads as the CLI and the dashboard show it", () => {
    expect(describeScope(null)).toBe("unrestricted");
    expect(describeScope([])).toBe("nothing");
    expect(describeScope(["anthropic", "github:work"])).toBe("anthropic, github:work");
  });
});
