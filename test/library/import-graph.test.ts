/**
 * What `import "svc-credentials"` pulls in: every file and npm package reachable from the package entry point
 * (type-only imports included, since a consumer's compiler reads those too). The library is the
 * client; the daemon, its store, vault, audit and OAuth flows, the CLI and the proxy stay out.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SRC = join(ROOT, "src");
const SERVER_FOLDERS = ["daemon", "store", "vault", "audit", "flows", "cli", "proxy"];
const SERVER_PACKAGES = [
  "fastify",
  "@fastify/swagger",
  "@fastify/swagger-ui",
  "fastify-type-provider-zod",
  "better-sqlite3",
  "kysely",
  "pg",
  "pino",
  "rotating-file-stream",
  "commander",
  "@clack/prompts",
  "picocolors",
  "@peculiar/x509",
  "reflect-metadata",
  "@napi-rs/keyring",
];

function specifiers(file: string): string[] {
  // Comments may show imports (index.ts shows how to import svc); only code counts.
  const text = readFileSync(file, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
  return [
    ...text.matchAll(/(?:import|export)[^'"]*?from\s+["']([^"']+)["']/g),
    ...text.matchAll(/^import\s+["']([^"']+)["']/gm),
    ...text.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g),
  ].map((match) => match[1]!);
}

/** The npm package a bare specifier names: `zod`, `zod/v4` → `zod`; `@scope/name/x` → `@scope/name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

function reachable(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    expect(existsSync(file), `${relative(ROOT, file)} exists`).toBe(true);
    files.add(file);
    for (const specifier of specifiers(file)) {
      if (specifier.startsWith(".")) pending.push(resolve(dirname(file), specifier));
      else if (!specifier.startsWith("node:")) packages.add(packageOf(specifier));
    }
  }
  return { files: [...files].map((file) => relative(SRC, file)).sort(), packages: [...packages].sort() };
}

describe("the package entry point", () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, { types: string; default: string }>;
  };
  const entry = manifest.exports["."]!;
  // The entry is built from src/client/index.ts (tsconfig.build.json: rootDir src, outDir dist).
  const graph = reachable(join(SRC, "client", "index.ts"));

  it('is exported as "svc-credentials", built JavaScript typed by its own declarations', () => {
    expect(manifest.name).toBe("svc-credentials");
    expect(entry).toEqual({ types: "./dist/client/index.d.ts", default: "./dist/client/index.js" });
  });

  it("reaches no server, store, vault, audit, flow, CLI or proxy code", () => {
    expect(graph.files).toContain("client/index.ts");
    expect(graph.files.filter((file) => SERVER_FOLDERS.includes(file.split("/")[0]!))).toEqual([]);
  });

  it("pulls in no server package, only zod (wire schemas) and @scure/base (did:key)", () => {
    expect(graph.packages.filter((name) => SERVER_PACKAGES.includes(name))).toEqual([]);
    expect(graph.packages).toEqual(["@scure/base", "zod"]);
  });
});
