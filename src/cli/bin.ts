#!/usr/bin/env node
// The `svc` command. Plain JavaScript syntax only, so that an old Node reaches the version check
// instead of a syntax error. `--version` is answered here, before anything else loads, so scripts
// that probe the version pay only for Node's own start-up.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

const MINIMUM_NODE = 22;
const args = process.argv.slice(2);
const major = Number(process.versions.node.split(".")[0]);
// Only a checkout has a Node 24 of its own (the `node` devDependency) and the TypeScript sources.
const bundledNode = fileURLToPath(new URL("../../node_modules/node/bin/node", import.meta.url));
const checkoutMain = new URL("../../src/cli/main.ts", import.meta.url);
const inCheckout = existsSync(checkoutMain);

if (args.length === 1 && (args[0] === "-v" || args[0] === "--version")) {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  process.stdout.write(`${manifest.version}\n`);
} else if (inCheckout && major < 24 && existsSync(bundledNode)) {
  // A checkout on an older system Node: hand over to the Node 24 installed with the dev dependencies.
  const result = spawnSync(bundledNode, [fileURLToPath(import.meta.url), ...args], { stdio: "inherit" });
  if (result.signal) process.kill(process.pid, result.signal);
  process.exit(result.status ?? 1);
} else if (major < MINIMUM_NODE) {
  process.stderr.write(`svc needs Node.js ${MINIMUM_NODE} or newer; this is Node.js ${process.version}\n`);
  process.exit(1);
} else {
  module.enableCompileCache?.();
  // A checkout runs its sources (Node 24 strips types outside node_modules), so edits need no
  // rebuild; the installed package runs the compiled dist/cli/main.js beside this file.
  const { main } = inCheckout
    ? ((await import(checkoutMain.href)) as typeof import("./main.ts"))
    : await import("./main.ts");
  process.exitCode = await main(args);
}
