import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { FORWARDED_SIGNALS, runChild } from "./child.ts";

const node = process.execPath;
const env = process.env;

/** Everything a stream carries until it ends. */
async function collect(stream: NodeJS.ReadableStream | null): Promise<string> {
  let text = "";
  for await (const chunk of stream ?? []) text += chunk;
  return text;
}

let dir: string;
let harness: string;
let trap: string;
let echo: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-child-"));
  // `svc run` in miniature: runs its arguments through runChild with the default (inherited) stdio.
  harness = join(dir, "harness.mjs");
  const childModule = new URL("./child.ts", import.meta.url).href;
  await writeFile(
    harness,
    `import { runChild } from ${JSON.stringify(childModule)};
const [command, ...args] = process.argv.slice(2);
const code = await runChild(command, args, { env: process.env }).exit;
process.stdout.write("harness: child exited " + code + "\\n");
process.exit(code);
`,
  );
  // Traps the signal named in argv and exits 7 after receiving it as many times as asked (or 1 after
  // 10 s, so a broken forwarder leaves no stray process).
  trap = join(dir, "trap.mjs");
  await writeFile(
    trap,
    `const [signal, times] = process.argv.slice(2);
let received = 0;
process.on(signal, () => {
  received += 1;
  process.stdout.write("child: " + signal + " " + received + "\\n");
  if (received === Number(times)) setTimeout(() => { process.stdout.write("child: exiting\\n"); process.exit(7); }, 200);
});
setTimeout(() => process.exit(1), 10_000);
process.stdout.write("child: ready\\n");
`,
  );
  // Upper-cases stdin to stdout, and says so on stderr.
  echo = join(dir, "echo.mjs");
  await writeFile(
    echo,
    `let text = "";
for await (const chunk of process.stdin) text += chunk;
process.stdout.write(text.toUpperCase());
process.stderr.write("echoed\\n");
`,
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("runChild", () => {
  it.each([0, 3, 42])("passes exit code %i through", async (code) => {
    const { exit } = runChild(node, ["-e", `process.exit(${code})`], { env, stdio: "pipe" });
    expect(await exit).toBe(code);
  });

  it.each([
    ["SIGKILL", 137],
    ["SIGTERM", 143],
  ] as const)("reports a child killed by %s as %i", async (signal, status) => {
    const { child, exit } = runChild(node, ["-e", "setInterval(() => {}, 1000)"], { env, stdio: "pipe" });
    await once(child, "spawn");
    child.kill(signal);
    expect(await exit).toBe(status);
  });

  it("reports a command that does not exist like a shell: 127", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const { exit } = runChild("svc-test-no-such-command", ["--flag"], { env, stdio: "pipe" });
    expect(await exit).toBe(127);
    expect(stderr).toHaveBeenCalledWith("svc run: svc-test-no-such-command: command not found\n");
  });

  it("reports a file that is not executable like a shell: 126", async () => {
    const script = join(dir, "not-executable.sh");
    await writeFile(script, "#!/bin/sh\nexit 0\n");
    await chmod(script, 0o644);
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const { exit } = runChild(script, [], { env, stdio: "pipe" });
    expect(await exit).toBe(126);
    expect(stderr).toHaveBeenCalledWith(`svc run: ${script}: permission denied\n`);
  });

  it("passes arguments verbatim, without a shell, with the given env and cwd", async () => {
    const { child, exit } = runChild(
      node,
      [
        "-e",
        "console.log(JSON.stringify([process.argv.slice(1), process.env.SVC_TEST_VALUE, process.cwd()]))",
        "$HOME",
        "a b",
        "*",
      ],
      { env: { ...env, SVC_TEST_VALUE: "from-env" }, cwd: dir, stdio: "pipe" },
    );
    const [stdout, code] = await Promise.all([collect(child.stdout), exit]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual([["$HOME", "a b", "*"], "from-env", dir]);
  });

  it("connects stdin, stdout and stderr", async () => {
    const { child, exit } = runChild(node, [echo], { env, stdio: "pipe" });
    child.stdin?.end("hello svc\n");
    const [stdout, stderr, code] = await Promise.all([collect(child.stdout), collect(child.stderr), exit]);
    expect(code).toBe(0);
    expect(stdout).toBe("HELLO SVC\n");
    expect(stderr).toBe("echoed\n");
  });

  it("forwards signals only while the child runs", async () => {
    const before = FORWARDED_SIGNALS.map((signal) => process.listenerCount(signal));
    const { child, exit } = runChild(node, ["-e", "setInterval(() => {}, 1000)"], { env, stdio: "pipe" });
    expect(FORWARDED_SIGNALS.map((signal) => process.listenerCount(signal))).toEqual(
      before.map((n) => n + 1),
    );
    child.kill("SIGKILL");
    await exit;
    expect(FORWARDED_SIGNALS.map((signal) => process.listenerCount(signal))).toEqual(before);
  });
});

describe("runChild in a process of its own", () => {
  let running: ChildProcess | undefined;

  afterEach(() => {
    running?.kill("SIGKILL");
    running = undefined;
  });

  /**
   * Starts the harness on `args`. `exited` is its [code, signal]; `output`, once stdout ends, is the
   * child's (inherited) output followed by the harness's own.
   */
  function startHarness(args: string[]) {
    const started = spawn(node, [harness, ...args], { env, stdio: "pipe" });
    running = started;
    let text = "";
    started.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      text += chunk;
    });
    const exited = once(started, "exit");
    const output = once(started, "close").then(() => text);
    /** Resolves once the output so far contains `expected`. */
    const outputContains = (expected: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!text.includes(expected)) return;
          started.stdout.off("data", check);
          resolve();
        };
        started.stdout.on("data", check);
        check();
      });
    return { process: started, exited, output, outputContains };
  }

  it("shares its stdin and stdout with the child by default", async () => {
    const run = startHarness([node, echo]);
    run.process.stdin.end("inherited\n");
    expect(await run.exited).toEqual([0, null]);
    expect(await run.output).toBe("INHERITED\nharness: child exited 0\n");
  });

  it.each(FORWARDED_SIGNALS)("forwards %s to the child and waits for it", async (signal) => {
    const run = startHarness([node, trap, signal, "1"]);
    await run.outputContains("child: ready");
    run.process.kill(signal);
    expect(await run.exited).toEqual([7, null]);
    expect(await run.output).toBe(
      `child: ready\nchild: ${signal} 1\nchild: exiting\nharness: child exited 7\n`,
    );
  });

  it("forwards a second SIGINT too, leaving the child to decide", async () => {
    const run = startHarness([node, trap, "SIGINT", "2"]);
    await run.outputContains("child: ready");
    run.process.kill("SIGINT");
    await run.outputContains("child: SIGINT 1");
    run.process.kill("SIGINT");
    expect(await run.exited).toEqual([7, null]);
    expect(await run.output).toBe(
      "child: ready\nchild: SIGINT 1\nchild: SIGINT 2\nchild: exiting\nharness: child exited 7\n",
    );
  });
});
