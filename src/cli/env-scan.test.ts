import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dotenvFiles, findKey, parseDotenv, scanEnvironment } from "./env-scan.ts";

const parse = (text: string) => Object.fromEntries(parseDotenv(text).values);

describe("parseDotenv", () => {
  it("reads KEY=value lines, with an export prefix and spaces around =", () => {
    expect(parse("A=1\nexport B=two\n  C = three  \nexport   D=4")).toEqual({
      A: "1",
      B: "two",
      C: "three",
      D: "4",
    });
  });

  it("skips comments and blank lines, and cuts a comment that follows a space", () => {
    expect(parse("# a comment\n\nA=1 # why\nB=x#y\n   # indented comment\n")).toEqual({ A: "1", B: "x#y" });
  });

  it("keeps = inside values", () => {
    expect(parse("URL=postgres://u:p@h/db?sslmode=require\nK=abc==")).toEqual({
      URL: "postgres://u:p@h/db?sslmode=require",
      K: "abc==",
    });
  });

  it("takes single-quoted and backtick values literally", () => {
    expect(parse("A='x # not a comment \\n $HOME'\nB=`it's`")).toEqual({
      A: "x # not a comment \\n $HOME",
      B: "it's",
    });
  });

  it("expands only the simple escapes of double-quoted values", () => {
    expect(parse('A="line1\\nline2\\t\\"q\\" \\\\ \\$X"')).toEqual({ A: 'line1\nline2\t"q" \\ \\$X' });
  });

  it("reads quoted values over several lines", () => {
    expect(parse('KEY="-----BEGIN-----\nabc\n-----END-----"\nNEXT=1')).toEqual({
      KEY: "-----BEGIN-----\nabc\n-----END-----",
      NEXT: "1",
    });
  });

  it("never expands or runs anything", () => {
    const braces = ["$", "{HOME}"].join("");
    expect(parse(`A=$(touch /tmp/pwned)\nB=${braces}\nC=\`whoami\``)).toEqual({
      A: "$(touch /tmp/pwned)",
      B: braces,
      C: "whoami",
    });
  });

  it("keeps the last of two assignments, handles CRLF and a BOM", () => {
    expect(parse("\uFEFFA=1\r\nA=2\r\nB=3")).toEqual({ A: "2", B: "3" });
  });

  it("reports bad lines by number without their content", () => {
    const parsed = parseDotenv('GOOD=1\nnot an assignment\nA="unterminated\nB=ok');
    expect(Object.fromEntries(parsed.values)).toEqual({ GOOD: "1", B: "ok" });
    expect(parsed.problems).toEqual([
      { line: 2, reason: "not a KEY=value line" },
      { line: 3, reason: 'the " quote is never closed' },
    ]);
  });

  it("goes on after a bad line when the quote closes later", () => {
    const parsed = parseDotenv('1BAD=x\nC="x" trailing\nD=4');
    expect(Object.fromEntries(parsed.values)).toEqual({ D: "4" });
    expect(parsed.problems.map((problem) => problem.line)).toEqual([1, 2]);
    expect(JSON.stringify(parsed.problems)).not.toContain("trailing");
  });

  it("allows empty values", () => {
    expect(parse("A=\nB=''\nC=\"\"")).toEqual({ A: "", B: "", C: "" });
  });
});

describe("dotenvFiles and scanEnvironment", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const project = (files: Record<string, string>) => {
    dir = mkdtempSync(join(tmpdir(), "svc-envscan-"));
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    return dir;
  };

  it("orders .env.local, other .local files, other .env.* files, then .env, and skips templates", () => {
    const root = project({
      ".env": "",
      ".env.local": "",
      ".env.production": "",
      ".env.development.local": "",
      ".env.development": "",
      ".env.example": "",
      ".env.sample": "",
      ".env.local.template": "",
      ".envrc": "",
      env: "",
    });
    mkdirSync(join(root, ".env.d"));
    expect(dotenvFiles(root)).toEqual([
      ".env.local",
      ".env.development.local",
      ".env.development",
      ".env.production",
      ".env",
    ]);
  });

  it("finds a provider's key: the environment wins over .env.local over .env", () => {
    const root = project({
      ".env": "OPENAI_API_KEY=from-env-file\n",
      ".env.local": "OPENAI_API_KEY=from-local\n",
    });
    const scan = scanEnvironment(root, { OPENAI_API_KEY: "from-process" });
    expect(findKey(scan, ["OPENAI_API_KEY"])).toEqual({
      variable: "OPENAI_API_KEY",
      source: "environment",
      value: "from-process",
      others: [
        { variable: "OPENAI_API_KEY", source: ".env.local", same: false },
        { variable: "OPENAI_API_KEY", source: ".env", same: false },
      ],
    });
    const withoutProcess = findKey(scanEnvironment(root, {}), ["OPENAI_API_KEY"]);
    expect(withoutProcess).toMatchObject({ source: ".env.local", value: "from-local" });
  });

  it("takes the provider's first variable that is set, wherever it is", () => {
    const root = project({ ".env": "GEMINI_API_KEY=primary\n" });
    const scan = scanEnvironment(root, { GOOGLE_API_KEY: "secondary" });
    expect(findKey(scan, ["GEMINI_API_KEY", "GOOGLE_API_KEY"])).toMatchObject({
      variable: "GEMINI_API_KEY",
      source: ".env",
      others: [{ variable: "GOOGLE_API_KEY", source: "environment", same: false }],
    });
  });

  it("ignores empty values and svc's own placeholder", () => {
    const root = project({ ".env": "A=\nB=svc-proxy-managed\n" });
    const scan = scanEnvironment(root, { A: "", B: "svc-proxy-managed", C: " " });
    expect(findKey(scan, ["A", "B", "C"])).toBeUndefined();
    expect(scan.sources.map((source) => [source.name, source.variables])).toEqual([
      ["environment", 0],
      [".env", 0],
    ]);
  });

  it("reports a dotenv file's bad lines", () => {
    const root = project({ ".env": "oops\nA=1\n" });
    const scan = scanEnvironment(root, {});
    expect(scan.sources[1]).toEqual({
      name: ".env",
      path: join(root, ".env"),
      variables: 1,
      problems: [{ line: 1, reason: "not a KEY=value line" }],
    });
  });
});
