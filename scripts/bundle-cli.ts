/**
 * Bundles the `svc` command (src/cli/bin.ts) into dist/cli/: the launcher bin.js, which answers
 * `--version` alone, a chunk with what every command loads (main.ts and its static imports), and
 * chunks for each command group, which program.ts imports when the command line names it. An
 * installed `svc whoami` then compiles four files instead of resolving and compiling 55 modules.
 *
 * Packages stay in node_modules, imported as they are, except the small ones every command loads
 * (BUNDLED_PACKAGES). The library (dist/client/) stays tsc's output, which the bundle never
 * imports, so the CLI never meets two copies of a class. tsc's modules of dist/cli/ stay beside
 * the chunks (their names never clash: chunks start with `chunk-`), unused by `svc`.
 */
import { posix, relative, sep } from "node:path";
import { rolldown } from "rolldown";
import { parseAst } from "rolldown/parseAst";

/** Pure-JavaScript packages on the path of every command, copied into the bundle. */
const BUNDLED_PACKAGES = ["commander", "picocolors", "@scure/base"];

const REQUIRE_BUILTIN = "\0svc:require-builtin";

function isBundledPackage(id: string): boolean {
  return BUNDLED_PACKAGES.some((name) => id === name || id.startsWith(`${name}/`));
}

/**
 * Code that finds files next to itself (`new URL("./bundled/", import.meta.url)`) must find the
 * same files from a chunk in dist/cli/: each `import.meta.url` of a source file becomes the URL of
 * that file's place in dist/, computed from the chunk's own URL at run time.
 */
function importMetaUrlAsInDist(source: string, id: string, srcDir: string, outDir: string): string {
  const inDist = `${outDir}/../${relative(srcDir, id)}`.replace(/\.ts$/, ".js");
  const fromChunk = relative(outDir, inDist).split(sep).join(posix.sep);
  return source.replaceAll("import.meta.url", `new URL(${JSON.stringify(fromChunk)}, import.meta.url).href`);
}

/**
 * `import { readFileSync } from "node:fs"` becomes `const { readFileSync } = requireBuiltin("node:fs")`.
 * An ES import of a builtin builds its module namespace, which reads every export, lazy getters
 * included: node:fs's `promises` loads fs/promises and readline (6 ms), node:http's loads undici
 * (55 ms). require() hands over the module object and reads only what the code uses.
 */
function builtinsByRequire(source: string): string {
  const program = parseAst(source, { lang: "ts", sourceType: "module" });
  let result = "";
  let copied = 0;
  for (const statement of program.body) {
    if (statement.type !== "ImportDeclaration" || statement.importKind === "type") continue;
    const from = statement.source.value;
    const values = statement.specifiers.filter(
      (s) => s.type !== "ImportSpecifier" || s.importKind !== "type",
    );
    if (!from.startsWith("node:") || values.length === 0) continue;
    const load = `__requireBuiltin(${JSON.stringify(from)})`;
    const named = values.flatMap((s) =>
      s.type === "ImportSpecifier"
        ? [
            s.imported.type === "Identifier" && s.imported.name !== s.local.name
              ? `${s.imported.name}: ${s.local.name}`
              : s.local.name,
          ]
        : [],
    );
    const whole = values
      .filter((s) => s.type !== "ImportSpecifier")
      .map((s) => `const ${s.local.name} = ${load};`);
    const declarations = [...whole, ...(named.length ? [`const { ${named.join(", ")} } = ${load};`] : [])];
    // As many lines as the import took, so that every later line keeps its number in the source map.
    const newlines = "\n".repeat(source.slice(statement.start, statement.end).split("\n").length - 1);
    result += `${source.slice(copied, statement.start)}${declarations.join(" ")}${newlines}`;
    copied = statement.end;
  }
  if (copied === 0) return source;
  // After the shebang, which stays first; the import is hoisted above the rest anyway.
  const shebang = source.startsWith("#!") ? source.slice(0, source.indexOf("\n") + 1) : "";
  const preamble = `${shebang}import { requireBuiltin as __requireBuiltin } from ${JSON.stringify(REQUIRE_BUILTIN)};\n`;
  return `${preamble}${result.slice(shebang.length)}${source.slice(copied)}`;
}

function svcSources(srcDir: string, outDir: string) {
  return {
    name: "svc:sources",
    resolveId: (id: string) => (id === REQUIRE_BUILTIN ? id : null),
    load: (id: string) =>
      id === REQUIRE_BUILTIN
        ? 'import { createRequire } from "node:module";\nexport const requireBuiltin = createRequire(import.meta.url);\n'
        : null,
    transform(code: string, id: string) {
      if (!id.startsWith(srcDir) || !id.endsWith(".ts")) return null;
      // bin.ts takes its few builtins itself, so that --version loads no other chunk.
      const source = id === `${srcDir}/cli/bin.ts` ? code : builtinsByRequire(code);
      return { code: importMetaUrlAsInDist(source, id, srcDir, outDir) };
    },
  };
}

export async function bundleCli(root: string): Promise<void> {
  const srcDir = `${root}src`;
  const outDir = `${root}dist/cli`;
  const bundle = await rolldown({
    input: { bin: `${srcDir}/cli/bin.ts` },
    platform: "node",
    external: (id) =>
      !id.startsWith(".") && !id.startsWith("/") && !id.startsWith("\0") && !isBundledPackage(id),
    plugins: [svcSources(srcDir, outDir)],
    onLog(level, log, handler) {
      // The transforms above return no source maps, but they keep every line where it was, so the
      // bundle's maps stay right to the line.
      if (log.code === "SOURCEMAP_BROKEN") return;
      handler(level, log);
    },
  });
  try {
    await bundle.write({
      dir: outDir,
      format: "esm",
      sourcemap: true,
      entryFileNames: "[name].js",
      chunkFileNames: "chunk-[name]-[hash].js",
      // main.ts and everything it imports statically in one chunk: what every command loads.
      codeSplitting: { groups: [{ name: "main", test: (id) => id === `${srcDir}/cli/main.ts` }] },
    });
  } finally {
    await bundle.close();
  }
}
