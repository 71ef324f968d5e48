import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** ARCHITECTURE.md's layout table: which of our folders each folder may import. */
const ALLOWED: Record<string, string[]> = {
  core: [],
  // The provider definition is a wire schema and its route rules are shared by the daemon, the
  // proxy and the library, so the providers leaf is importable by every layer that speaks HTTP.
  api: ["core", "providers"],
  identity: ["core"],
  store: ["core"],
  vault: ["core", "store"],
  providers: ["core"],
  flows: ["core", "providers"],
  audit: ["core", "store"],
  daemon: ["core", "api", "identity", "store", "vault", "providers", "flows", "audit"],
  client: ["core", "api", "identity", "providers"],
  proxy: ["core", "api", "client", "providers"],
  cli: ["core", "api", "client", "proxy", "identity", "providers"],
};

/** Leaves know nothing of HTTP servers, the CLI or the process they run in. */
const SERVER_PACKAGES = [
  "fastify",
  "@fastify/",
  "commander",
  "@clack/prompts",
  "better-sqlite3",
  "pg",
  "kysely",
];
const LEAVES = ["core", "identity", "providers", "flows", "api"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "bundled" ? [] : sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/**
 * The one sanctioned crossing: `svc daemon serve` is the daemon's process entry, so the CLI loads
 * the daemon's composition root lazily (and only there), never statically.
 */
const LAZY_EXCEPTIONS = new Set(["cli/commands/daemon.ts → daemon/serve.ts"]);

function staticImports(text: string): string[] {
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s+["']([^"']+)["']/g)].map((match) => match[1]!);
}

function dynamicImports(text: string): string[] {
  return [...text.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g)].map((match) => match[1]!);
}

function imports(file: string): Array<{ specifier: string; lazy: boolean }> {
  const text = readFileSync(file, "utf8");
  return [
    ...staticImports(text).map((specifier) => ({ specifier, lazy: false })),
    ...dynamicImports(text).map((specifier) => ({ specifier, lazy: true })),
  ];
}

const folderOf = (file: string) => relative(SRC, file).split("/")[0]!;

describe("module boundaries (ARCHITECTURE.md layout)", () => {
  const files = sourceFiles(SRC);

  it("has every source folder in the layout table", () => {
    for (const file of files) expect(Object.keys(ALLOWED), relative(SRC, file)).toContain(folderOf(file));
  });

  it("imports across folders only along the allowed edges", () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = folderOf(file);
      for (const { specifier, lazy } of imports(file).filter((i) => i.specifier.startsWith("."))) {
        const target = resolve(file, "..", specifier);
        if (!target.startsWith(SRC)) continue;
        const to = folderOf(target);
        const edge = `${relative(SRC, file)} → ${relative(SRC, target)}`;
        if (lazy && LAZY_EXCEPTIONS.has(edge)) continue;
        if (to !== from && !ALLOWED[from]!.includes(to)) violations.push(edge);
      }
    }
    expect(violations).toEqual([]);
  });

  it("keeps server and CLI packages out of the leaf modules", () => {
    const violations: string[] = [];
    for (const file of files.filter((f) => LEAVES.includes(folderOf(f)))) {
      for (const { specifier } of imports(file)) {
        if (SERVER_PACKAGES.some((name) => specifier === name || specifier.startsWith(name))) {
          violations.push(`${relative(SRC, file)} imports ${specifier}`);
        }
      }
    }
    expect(violations).toEqual([]);
  });
});
