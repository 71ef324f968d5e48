/**
 * mitmdump, the reference peer of the proxy benchmarks (bench/proxy.ts, bench/proxy-transport.ts):
 * Debian's mitmproxy with a one-line addon that sets a static Authorization header and sends every
 * request to the local upstream (the redirect every proxy in these benchmarks gets).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import os from "node:os";
import { join } from "node:path";
import { freePort } from "./sandbox.ts";

export interface Mitmdump {
  child: ChildProcess;
  /** The proxy URL for HTTPS_PROXY. */
  url: string;
  /** mitmdump's CA, for NODE_EXTRA_CA_CERTS. */
  caPath: string;
  stop(): void;
}

function waitForPort(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve();
      });
      socket.once("error", () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on ${port}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/**
 * Starts mitmdump, or says why it cannot (not installed, or it did not start): the benchmarks then
 * go on without the peer.
 */
export async function startMitmdump(
  upstreamPort: number,
  authorization: string,
): Promise<Mitmdump | { unavailable: string }> {
  if (spawnSync("mitmdump", ["--version"], { encoding: "utf8" }).status !== 0) {
    return { unavailable: "mitmdump not found (apt-get install mitmproxy)" };
  }
  const dir = mkdtempSync(join(os.tmpdir(), "svc-bench-mitm-"));
  const addon = join(dir, "svc_header.py");
  writeFileSync(
    addon,
    `def request(flow):\n    flow.request.headers["authorization"] = "${authorization}"; flow.request.host = "127.0.0.1"; flow.request.port = ${upstreamPort}\n`,
  );
  const port = await freePort();
  const child = spawn(
    "mitmdump",
    [
      "-q",
      "--listen-host",
      "127.0.0.1",
      "--listen-port",
      String(port),
      "--set",
      `confdir=${dir}`,
      "--set",
      "connection_strategy=lazy",
      // The addon picks the upstream; without this mitmdump first resolves and connects to the
      // CONNECT host to copy its certificate, and waits seconds on a DNS lookup that cannot succeed.
      "--set",
      "upstream_cert=false",
      "--ssl-insecure",
      "-s",
      addon,
    ],
    { stdio: "ignore" },
  );
  const stop = () => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port);
  } catch (error) {
    stop();
    return { unavailable: `mitmdump did not start (${(error as Error).message})` };
  }
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    caPath: join(dir, "mitmproxy-ca-cert.pem"),
    stop,
  };
}
