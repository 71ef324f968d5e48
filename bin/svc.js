#!/usr/bin/env node
// Entry point. `--version` is answered here, before any TypeScript loads, so scripts that probe
// the version pay only for Node's own start-up.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const major = Number(process.versions.node.split(".")[0]);

if (args.length === 1 && (args[0] === "-v" || args[0] === "--version")) {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  process.stdout.write(`${manifest.version}\n`);
} else if (major < 24) {
  // An older system Node: hand over to the Node 24 installed with the package (devDependency `node`).
  const bundled = fileURLToPath(new URL("../node_modules/node/bin/node", import.meta.url));
  if (!existsSync(bundled)) {
    process.stderr.write(
      `svc needs Node.js 24 or newer (this is ${process.version}); run \`npm install\` first\n`,
    );
    process.exit(1);
  }
  const result = spawnSync(bundled, [fileURLToPath(import.meta.url), ...args], { stdio: "inherit" });
  if (result.signal) process.kill(process.pid, result.signal);
  process.exit(result.status ?? 1);
} else {
  module.enableCompileCache?.();
  const { main } = await import("../src/cli/main.ts");
  process.exitCode = await main(args);
}
