#!/usr/bin/env node
// The `svc` command. Plain JavaScript syntax only, so that an old Node reaches the version check
// instead of a syntax error. `--version` is answered here, before anything else loads (even the
// other builtins are imported only where needed), so scripts that probe the version pay for little
// more than Node's own start-up. node:fs comes by require(): its ES module namespace would read
// `fs.promises`, which loads fs/promises and readline (about 6 ms).
import { createRequire } from "node:module";

const { existsSync, readFileSync }: typeof import("node:fs") = createRequire(import.meta.url)("node:fs");

const MINIMUM_NODE = 22;
const args = process.argv.slice(2);

if (args.length === 1 && (args[0] === "-v" || args[0] === "--version")) {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  process.stdout.write(`${manifest.version}\n`);
} else {
  await run();
}

async function run(): Promise<void> {
  const major = Number(process.versions.node.split(".")[0]);
  // Only a checkout has the TypeScript sources and a Node 24 of its own (the `node` devDependency).
  const checkoutMain = new URL("../../src/cli/main.ts", import.meta.url);
  const bundledNode = new URL("../../node_modules/node/bin/node", import.meta.url);
  const inCheckout = existsSync(checkoutMain);
  if (inCheckout && major < 24 && existsSync(bundledNode)) {
    // A checkout on an older system Node: hand over to the Node 24 installed with the dev dependencies.
    const { spawnSync } = await import("node:child_process");
    const { fileURLToPath } = await import("node:url");
    const result = spawnSync(fileURLToPath(bundledNode), [fileURLToPath(import.meta.url), ...args], {
      stdio: "inherit",
    });
    if (result.signal) process.kill(process.pid, result.signal);
    process.exit(result.status ?? 1);
  }
  if (major < MINIMUM_NODE) {
    process.stderr.write(`svc needs Node.js ${MINIMUM_NODE} or newer; this is Node.js ${process.version}\n`);
    process.exit(1);
  }
  const { default: module } = await import("node:module");
  module.enableCompileCache?.();
  // A checkout runs its sources (Node 24 strips types outside node_modules), so edits need no
  // rebuild; the installed package runs the compiled dist/cli/main.js beside this file.
  const { main } = inCheckout
    ? ((await import(checkoutMain.href)) as typeof import("./main.ts"))
    : await import("./main.ts");
  process.exitCode = await main(args);
}
