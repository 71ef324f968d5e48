import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { AuditStatus } from "../../src/audit/events.ts";
import { DaemonClient } from "../../src/client/daemon-client.ts";
import { registerIdentity } from "../../src/client/session.ts";
import { homeLayout } from "../../src/core/paths.ts";
import type { DaemonConfig } from "../../src/daemon/context.ts";
import { type RunningDaemon, startDaemon } from "../../src/daemon/serve.ts";
import { IdentityFiles, type LocalIdentity } from "../../src/identity/identity-files.ts";
import { signPopToken } from "../../src/identity/pop-token.ts";
import type { ProviderDefinitionInput } from "../../src/providers/schema.ts";
import { noKeyring } from "../../src/vault/master-key.ts";

export interface TestIdentity {
  identity: LocalIdentity;
  client: DaemonClient;
}

export interface TestDaemon {
  daemon: RunningDaemon;
  layout: ReturnType<typeof homeLayout>;
  /** The temporary directory holding the home; pass it as `root` to start again on the same state. */
  root: string;
  /** The environment the daemon was started with (the same master key settings on a restart). */
  env: NodeJS.ProcessEnv;
  identity: LocalIdentity;
  client: DaemonClient;
  newIdentity(options?: { claim?: boolean }): Promise<TestIdentity>;
  /** A fresh identity claimed by a new principal (role `user`, its own vault). */
  newUser(): Promise<TestIdentity & { principalId: string }>;
  /** Stops the daemon and keeps its home (for a restart on the same state). */
  close(): Promise<void>;
  /** Stops this daemon and starts another on the same home, env, port and first identity. */
  restart(): Promise<TestDaemon>;
  /** Stops the daemon and deletes its home. */
  stop(): Promise<void>;
}

export interface StartTestDaemonOptions {
  /** Reuse the state under this root (a previous TestDaemon's `root`) instead of a new one. */
  root?: string;
  /** Listen on this port (a restart keeps its URL, so OAuth callbacks still reach it); default: any free one. */
  port?: number;
  /** Act as this identity (it is registered again, idempotently) instead of a new one. */
  identity?: LocalIdentity;
  /** Hosted-mode settings (public URL, trusted proxies). */
  config?: Pick<DaemonConfig, "publicUrl" | "trustedProxies">;
}

/** A real daemon in this process on an ephemeral loopback port, with one claimed identity. */
export async function startTestDaemon(
  env: NodeJS.ProcessEnv = {},
  options: StartTestDaemonOptions = {},
): Promise<TestDaemon> {
  const root = options.root ?? mkdtempSync(join(tmpdir(), "svc-daemon-"));
  const layout = homeLayout(join(root, "home"));
  const daemonEnv: NodeJS.ProcessEnv = { SVC_ENCRYPTION_MODE: "local_key", ...env };
  const daemon = await startDaemon({
    layout,
    config: { host: "127.0.0.1", port: options.port ?? 0, ...options.config },
    env: daemonEnv,
    keyring: noKeyring("no keyring in tests"),
    logger: false,
  });
  const files = new IdentityFiles(layout.identities);
  const connect = async (identity: LocalIdentity, claim: boolean): Promise<TestIdentity> => {
    const client = new DaemonClient({ baseUrl: daemon.url, identity });
    if (claim) {
      await registerIdentity(client, identity, layout);
    } else {
      await client.post("/api/identities", { handle: identity.handle, did: identity.did });
    }
    return { identity, client };
  };
  const newIdentity = (opts: { claim?: boolean } = {}) => connect(files.create(), opts.claim !== false);
  const newUser = async () => {
    const principal = await daemon.context.principals.create(new Date());
    const created = await newIdentity({ claim: false });
    await daemon.context.identities.claim(created.identity.handle, principal.id, new Date());
    return { ...created, principalId: principal.id };
  };
  const first = options.identity ? await connect(options.identity, true) : await newIdentity();
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= daemon.close();
    return closed;
  };
  return {
    daemon,
    layout,
    root,
    env,
    identity: first.identity,
    client: first.client,
    newIdentity,
    newUser,
    close,
    async restart() {
      await close();
      return startTestDaemon(env, { root, identity: first.identity, port: Number(new URL(daemon.url).port) });
    },
    async stop() {
      await close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Starts an API-key login and completes it with `{api_key}` as the client's identity. */
export async function loginWithApiKey(
  client: DaemonClient,
  provider: string,
  apiKey: string,
  options: { connection?: string; force?: boolean } = {},
): Promise<AuthSession> {
  const session = await client.post<AuthSession>("/api/auth/sessions", {
    provider,
    ...(options.connection ? { connection: options.connection } : {}),
    ...(options.force ? { force: true } : {}),
  });
  return client.post<AuthSession>(`/api/auth/sessions/${session.session_id}/input`, { api_key: apiKey });
}

/** A valid custom API-key provider definition (override any field). */
export function customProvider(
  name: string,
  overrides: Partial<ProviderDefinitionInput> = {},
): ProviderDefinitionInput {
  return {
    name,
    display_name: `Custom ${name}`,
    description: "A provider registered by a test.",
    auth_type: "api_key",
    flow: "api_key",
    api_url: `api.${name}.example.com`,
    api_key: { header_name: "Authorization", header_prefix: "Bearer" },
    env: [],
    docs_url: `https://docs.${name}.example.com/keys`,
    ...overrides,
  };
}

export interface RawResponse<T = unknown> {
  status: number;
  headers: Headers;
  /** The body as text (the exact bytes a caller got). */
  text: string;
  /** The body parsed as JSON, when it is JSON. */
  body: T;
}

/** A PoP-signed request with `fetch`, for what the client hides: status codes and headers. */
export async function signedFetch<T = unknown>(
  baseUrl: string,
  identity: LocalIdentity,
  method: string,
  path: string,
  body?: unknown,
): Promise<RawResponse<T>> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = {
    authorization: `PoP ${signPopToken({ ...identity, method, pathAndQuery: path, body: payload })}`,
  };
  if (payload !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed as T };
}

/**
 * Records proxy traffic of `client`'s identity as if its `svc run` had shipped it at the events'
 * own (past) times. `POST /audit/events` accepts only the last minutes, so tests of activity over
 * hours and days write to the audit log the way that route does.
 */
export async function recordProxyTraffic(
  t: TestDaemon,
  client: DaemonClient,
  events: ReadonlyArray<{
    timestamp: string;
    event: string;
    status: string;
    provider?: string | null;
    connection?: string | null;
    detail?: Record<string, string | number | boolean | null>;
  }>,
): Promise<void> {
  const handle = client.identity?.handle;
  if (!handle) throw new Error("recordProxyTraffic needs a client with an identity");
  const identity = await t.daemon.context.identities.find(handle);
  if (!identity?.principalId) throw new Error(`${handle} is not a claimed identity`);
  await t.daemon.context.audit.recordMany(
    events.map((event) => ({
      event: event.event,
      status: event.status as AuditStatus,
      source: "external" as const,
      provider: event.provider ?? null,
      connection: event.connection ?? null,
      identity: handle,
      principal_id: identity.principalId,
      timestamp: new Date(event.timestamp),
      ...(event.detail ? { detail: event.detail } : {}),
    })),
  );
}
