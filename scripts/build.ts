/**
 * `npm run build`: compiles src/ to dist/ (JavaScript, .d.ts, source maps) and copies what the
 * code reads by path at run time (the bundled provider definitions, the dashboard's static files,
 * the preload `svc run` gives Node children),
 * so that dist/ works where Node will not strip types: inside node_modules. Then bundles the CLI
 * (scripts/bundle-cli.ts) over dist/cli/, so that `svc` loads a few files instead of dozens.
 */
import { spawnSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { bundleCli } from "./bundle-cli.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
const tsc = fileURLToPath(new URL("../node_modules/.bin/tsc", import.meta.url));

rmSync(`${root}dist`, { recursive: true, force: true });
const compiled = spawnSync(tsc, ["-p", `${root}tsconfig.build.json`], { stdio: "inherit" });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
for (const path of ["providers/bundled", "dashboard", "proxy/node-preload.cjs"]) {
  cpSync(`${root}src/${path}`, `${root}dist/${path}`, { recursive: true });
}
await bundleCli(root);
