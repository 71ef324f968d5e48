/**
 * Shell completion as a person gets it: bash sources `svc completion bash` and completes words
 * with the real `svc` on PATH, provider and connection names included, fetched from the daemon;
 * with the daemon down, Tab still completes commands and says nothing.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SVC_BIN, SvcSandbox } from "../support/cli.ts";

const DRIVER = `eval "$(svc completion bash)"
complete_words() {
  COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=()
  _svc_complete
  printf '%s\\n' "\${COMPREPLY[@]}"
}
complete_words "$@"
`;

let sandbox: SvcSandbox;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sandbox = await SvcSandbox.create({ SVC_ENCRYPTION_MODE: "local_key" });
  // `svc` on PATH, as after a global install.
  const bin = join(sandbox.home, "..", "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "svc"), `#!/bin/sh\nexec "${process.execPath}" "${SVC_BIN}" "$@"\n`);
  chmodSync(join(bin, "svc"), 0o755);
  writeFileSync(join(bin, "complete.sh"), DRIVER);
  env = { ...sandbox.env, PATH: `${bin}:${process.env.PATH}` };
  for (const connection of ["default", "work"]) {
    const login = await sandbox.run(["login", "openai", "--connection", connection], {
      input: `sk-completion-${connection}-0123456789abcdef\n`,
    });
    expect(login.code, login.stderr).toBe(0);
  }
});
afterAll(async () => {
  await sandbox?.destroy();
});

/** What bash offers for the words typed so far (the last one is being completed). */
function complete(...words: string[]): { offers: string[]; stderr: string; ms: number } {
  const started = Date.now();
  const result = spawnSync("bash", [join(sandbox.home, "..", "bin", "complete.sh"), "svc", ...words], {
    env,
    encoding: "utf8",
    timeout: 20_000,
  });
  return {
    offers: result.stdout.split("\n").filter(Boolean),
    stderr: result.stderr,
    ms: Date.now() - started,
  };
}

describe("bash completion", () => {
  it("completes commands, subcommands and options", () => {
    expect(complete("do").offers).toEqual(["doctor"]);
    expect(complete("daemon", "st").offers).toEqual(["start", "stop", "status"]);
    expect(complete("login", "--con").offers).toEqual(["--connection"]);
  });

  it("completes provider and connection names from the daemon", () => {
    expect(complete("login", "opena").offers).toEqual(["openai"]);
    expect(complete("login", "").offers.length).toBeGreaterThan(50);
    expect(complete("logout", "").offers).toEqual(["openai"]);
    expect(complete("connections", "set-default", "openai", "").offers).toEqual(["default", "work"]);
    expect(complete("logout", "openai", "--connection", "w").offers).toEqual(["work"]);
    expect(complete("provider", "inspect", "anthro").offers).toEqual(["anthropic"]);
  });

  it("says nothing and waits for nothing when the daemon is down", async () => {
    expect((await sandbox.run(["daemon", "stop"])).code).toBe(0);
    const names = complete("login", "op");
    expect(names).toMatchObject({ offers: [], stderr: "" });
    expect(names.ms).toBeLessThan(5_000);
    expect(complete("daemon", "sta").offers).toEqual(["start", "status"]);
  });
});

describe("zsh and fish scripts", () => {
  it("ask the daemon for the same names", async () => {
    for (const shell of ["zsh", "fish"]) {
      const script = (await sandbox.run(["completion", shell])).stdout;
      expect(script).toContain("svc __names");
      for (const kind of ["providers", "connected", "connections"])
        expect(script).toContain(`svc_names ${kind}`);
    }
  });
});
