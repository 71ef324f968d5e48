/**
 * Node binaries of other release lines, for tests that run children (or svc itself) on them: this
 * process's Node, the system's, or the `node` npm package of that line, installed once into
 * node_modules/.cache (the package ships the binary itself; nothing else is downloaded).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CACHE = join(ROOT, "node_modules", ".cache", "svc-node-lines");

/** `npm install <spec>` into its own folder under the cache, once; returns the folder. */
export async function installedOnce(folder: string, spec: string): Promise<string> {
  const dir = join(CACHE, folder);
  if (existsSync(join(dir, "node_modules", ".package-lock.json"))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), "{}\n");
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}` };
  await new Promise<void>((resolve, reject) => {
    const npm = spawn("npm", ["install", spec, "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: dir,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    npm.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    npm.on("error", reject);
    npm.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`npm install ${spec}: ${stderr}`))));
  });
  return dir;
}

/** A Node binary of this major line. */
export async function nodeOfLine(major: number): Promise<string> {
  if (Number(process.versions.node.split(".")[0]) === major) return process.execPath;
  for (const system of ["/usr/bin/node", "/usr/local/bin/node"]) {
    const version = spawnSync(system, ["--version"], { encoding: "utf8" }).stdout ?? "";
    if (version.startsWith(`v${major}.`)) return system;
  }
  return join(await installedOnce(`node${major}`, `node@${major}`), "node_modules", "node", "bin", "node");
}
