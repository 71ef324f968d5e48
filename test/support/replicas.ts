/**
 * Hosted mode for tests: several real daemon processes (`svc daemon serve`) sharing one
 * PostgreSQL schema, one Redis prefix and one master key, behind one load balancer whose URL is
 * their public URL. Each replica has a home of its own (logs, pid files), as separate machines
 * would; they share the bootstrap secret so a test identity can claim itself locally.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DaemonClient } from "../../src/client/daemon-client.ts";
import { registerIdentity } from "../../src/client/session.ts";
import { ensureBootstrapSecret } from "../../src/core/bootstrap-secret.ts";
import { type HomeLayout, homeLayout } from "../../src/core/paths.ts";
import { IdentityFiles, type LocalIdentity } from "../../src/identity/identity-files.ts";
import { freePort, SVC_BIN } from "./cli.ts";
import { type LoadBalancer, startLoadBalancer } from "./load-balancer.ts";
import { createRedisFixture, type RedisFixture } from "./redis.ts";
import { createStoreFixture, type StoreFixture } from "./stores.ts";

export interface Replica {
  name: string;
  /** The replica's own address (behind the balancer). */
  url: string;
  layout: HomeLayout;
  env: NodeJS.ProcessEnv;
  process: ChildProcess;
  /** What the process printed (its pino log and any crash), for failure messages. */
  output(): string;
  /** A client signing as the set's identity that talks to this replica directly. */
  client: DaemonClient;
  /** Stops the process with `signal` and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface ReplicaSet {
  replicas: Replica[];
  balancer: LoadBalancer;
  store: StoreFixture;
  redis: RedisFixture;
  /** The test's identity, claimed (admin, the first principal). */
  identity: LocalIdentity;
  /** A client through the balancer. */
  client: DaemonClient;
  /** A new identity claimed locally through `replica` (a user principal unless it is the first). */
  newIdentity(via?: Replica): Promise<LocalIdentity>;
  /** A client signing as `identity` that talks to `url`. */
  clientAt(url: string, identity?: LocalIdentity): DaemonClient;
  /** Starts another replica on the same store, Redis and key (a replacement after a kill). */
  addReplica(name: string, extraEnv?: NodeJS.ProcessEnv): Promise<Replica>;
  dispose(): Promise<void>;
}

export interface ReplicaSetOptions {
  count?: number;
  /** Per-replica environment additions, by index (e.g. another Redis for one of them). */
  envFor?: (index: number) => NodeJS.ProcessEnv;
}

const START_TIMEOUT_MS = 30_000;

async function waitForHealth(url: string, replica: () => string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`replica exited with ${child.exitCode}:\n${replica()}`);
    try {
      const response = await fetch(`${url}/api/health`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`replica at ${url} did not become healthy:\n${replica()}`);
}

export async function startReplicaSet(options: ReplicaSetOptions = {}): Promise<ReplicaSet> {
  const root = mkdtempSync(join(tmpdir(), "svc-replicas-"));
  const store = await createStoreFixture("postgres");
  const redis = createRedisFixture();
  const masterKey = randomBytes(32).toString("base64");
  const bootstrapSecret = join(root, "bootstrap.secret");
  ensureBootstrapSecret(bootstrapSecret);
  const targets: string[] = [];
  const balancer = await startLoadBalancer(targets);
  const replicas: Replica[] = [];
  const files = new IdentityFiles(join(root, "identities"));
  let identity: LocalIdentity | undefined;

  const clientAt = (url: string, who: LocalIdentity | undefined = identity) =>
    new DaemonClient({ baseUrl: url, ...(who ? { identity: who } : {}), timeoutMs: 20_000 });

  async function addReplica(name: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<Replica> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const layout = homeLayout(join(root, name));
    mkdirSync(layout.server, { recursive: true, mode: 0o700 });
    copyFileSync(bootstrapSecret, layout.bootstrapSecret);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SVC_HOME: layout.home,
      SVC_MASTER_KEY: masterKey,
      SVC_DATABASE_URL: store.url,
      ...redis.env,
      SVC_PUBLIC_URL: balancer.url,
      SVC_TRUSTED_PROXIES: "127.0.0.1",
      SVC_LOG_LEVEL: "warn",
      ...extraEnv,
    };
    const child = spawn(
      process.execPath,
      [SVC_BIN, "daemon", "serve", "--host", "127.0.0.1", "--port", String(port)],
      { env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    await waitForHealth(url, () => output, child);
    const replica: Replica = {
      name,
      url,
      layout,
      env,
      process: child,
      output: () => output,
      get client() {
        return clientAt(url);
      },
      async stop(signal: NodeJS.Signals = "SIGTERM") {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
        const index = targets.indexOf(url);
        if (index >= 0) targets.splice(index, 1);
      },
    };
    replicas.push(replica);
    targets.push(url);
    return replica;
  }

  async function newIdentity(via: Replica = replicas[0]!): Promise<LocalIdentity> {
    const created = files.create();
    await registerIdentity(clientAt(via.url, created), created, via.layout);
    return created;
  }

  const set: ReplicaSet = {
    replicas,
    balancer,
    store,
    redis,
    get identity() {
      return identity!;
    },
    get client() {
      return clientAt(balancer.url);
    },
    newIdentity,
    clientAt,
    addReplica,
    async dispose() {
      await Promise.all(replicas.map((replica) => replica.stop("SIGKILL")));
      await balancer.close();
      await store.dispose();
      await redis.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    // Started together, as an orchestrator would: the migrations must still run once.
    await Promise.all(
      Array.from({ length: options.count ?? 2 }, (_, index) =>
        addReplica(String.fromCharCode(97 + index), options.envFor?.(index)),
      ),
    );
    replicas.sort((a, b) => a.name.localeCompare(b.name));
    identity = await newIdentity();
  } catch (error) {
    await set.dispose();
    throw error;
  }
  return set;
}
