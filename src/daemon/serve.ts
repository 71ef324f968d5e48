import { readFileSync, rmSync, writeFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { AuditLog } from "../audit/audit-log.ts";
import { ensureBootstrapSecret } from "../core/bootstrap-secret.ts";
import type { DaemonState } from "../core/daemon-state.ts";
import { UnexpectedError } from "../core/errors.ts";
import { ensureInstanceId } from "../core/instance-id.ts";
import type { HomeLayout } from "../core/paths.ts";
import { ensurePrivateDir, writePrivateFile } from "../core/secure-fs.ts";
import { SPEC_VERSION, VERSION } from "../core/version.ts";
import { MemoryReplayCache } from "../identity/pop-token.ts";
import { loadBundledProviders } from "../providers/catalogue.ts";
import { CustomProviderRepository } from "../store/custom-providers.ts";
import { openRuntimeState, type RuntimeState } from "../store/runtime-state.ts";
import { SettingsRepository } from "../store/settings.ts";
import { openStore, type Store } from "../store/store.ts";
import { type KeyringAccess, osKeyring, resolveMasterKey } from "../vault/master-key.ts";
import { VaultService } from "../vault/vault-service.ts";
import { buildApp } from "./app.ts";
import type { DaemonConfig, DaemonContext } from "./context.ts";
import {
  CLAIM_LINK_RATE,
  CLAIM_TTL_MS,
  DASHBOARD_LINK_TTL_MS,
  SELF_REGISTRATION_LIMIT_PER_ADDRESS,
  SIGN_IN_LIMIT_PER_ADDRESS,
  SIGN_IN_LIMIT_PER_EMAIL,
} from "./context.ts";
import { lockHome } from "./home-lock.ts";
import { AttemptLimiter } from "./services/attempt-limiter.ts";
import { externalRetentionDays, startExternalRetention } from "./services/audit-retention.ts";
import { AuthSessionService } from "./services/auth-sessions.ts";
import { BrowserSessionService } from "./services/browser-sessions.ts";
import { ChangeNotices } from "./services/change-notices.ts";
import { ConnectionService } from "./services/connections.ts";
import { CredentialService } from "./services/credentials.ts";
import { DevicePollLeases } from "./services/device-poll-leases.ts";
import { FixedWindowRate } from "./services/fixed-window-rate.ts";
import { IdentityRegistry } from "./services/identity-registry.ts";
import { OAuthEndpointResolver } from "./services/oauth-endpoints.ts";
import { OAuthLoginService } from "./services/oauth-login.ts";
import { OAuthTokenService } from "./services/oauth-tokens.ts";
import { OneTimeTokens } from "./services/one-time-tokens.ts";
import { PrincipalService } from "./services/principals.ts";
import { ProbeCache } from "./services/probe-cache.ts";
import { ProviderRegistry } from "./services/provider-registry.ts";
import { SPEC_VERSION_SETTING, SYSTEM_VAULT_ID } from "./services/readiness.ts";
import { ReplayHorizon } from "./services/replay-horizon.ts";
import { SharedReplayCache } from "./services/shared-replay-cache.ts";

export interface DaemonStartOptions {
  layout: HomeLayout;
  config: DaemonConfig;
  env?: NodeJS.ProcessEnv;
  keyring?: KeyringAccess;
  logger?: Logger | false;
}

export interface RunningDaemon {
  app: FastifyInstance;
  context: DaemonContext;
  url: string;
  close(): Promise<void>;
}

export function daemonLogger(): Logger {
  return pino({
    level: process.env.SVC_LOG_LEVEL ?? "info",
    redact: {
      paths: ["req.headers.authorization", "req.headers.cookie", "*.secret", "*.token"],
      censor: "[redacted]",
    },
  });
}

/** Listens, turning the usual socket failures into a message that says what to do. */
async function listen(app: FastifyInstance, config: DaemonConfig): Promise<void> {
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const where = `${config.host}:${config.port}`;
    if (code === "EADDRINUSE") {
      throw new UnexpectedError(
        `${where} is already in use: another svc daemon (see \`svc daemon status\`) or another program holds it; stop it, or pass --port`,
        { cause: error },
      );
    }
    if (code === "EACCES" || code === "EADDRNOTAVAIL") {
      throw new UnexpectedError(
        `cannot listen on ${where} (${code === "EACCES" ? "permission denied" : "no such local address"}); pick another --host or --port`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Builds the context (store, vault, identities) and starts listening. */
export async function startDaemon(options: DaemonStartOptions): Promise<RunningDaemon> {
  const { layout, config } = options;
  const env = options.env ?? process.env;
  ensurePrivateDir(layout.home);
  ensurePrivateDir(layout.server);
  const store = await openStore(env, layout);
  let runtimeState: RuntimeState | undefined;
  let stopRetention: (() => void) | undefined;
  try {
    runtimeState = await openRuntimeState(env);
    const horizon = runtimeState.kind === "memory" ? new ReplayHorizon(layout.replayHorizon) : undefined;
    const retentionDays = externalRetentionDays(env);
    const context = await createContext(store, runtimeState, options, env);
    if (horizon) context.popIssuedNotBefore = horizon.open(context.startedAt);
    stopRetention = await startExternalRetention(context.audit, retentionDays, context.now, (error) => {
      if (options.logger) options.logger.warn({ err: error }, "could not drop expired proxy audit events");
    });
    const app = await buildApp(context, { logger: options.logger });
    await listen(app, config);
    context.oauthLogins.startTakeover((name) => context.providers.get(name));
    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : config.port;
    const host = config.host.includes(":") ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    let closed: Promise<void> | undefined;
    const close = async () => {
      stopRetention?.();
      await app.close();
      // Only now: every request this run will ever answer has been answered.
      horizon?.close(new Date());
      context.authSessions.close();
      await context.oauthLogins.close();
      await context.audit.close();
      await runtimeState?.close();
      await store.close();
    };
    return {
      app,
      context,
      url,
      close() {
        // Once: a second call waits for the first (the store is gone after it).
        closed ??= close();
        return closed;
      },
    };
  } catch (error) {
    stopRetention?.();
    await runtimeState?.close();
    await store.close();
    throw error;
  }
}

async function createContext(
  store: Store,
  runtimeState: RuntimeState,
  options: DaemonStartOptions,
  env: NodeJS.ProcessEnv,
): Promise<DaemonContext> {
  const { layout } = options;
  const masterKey = await resolveMasterKey({
    env: {
      SVC_MASTER_KEY: env.SVC_MASTER_KEY,
      SVC_MASTER_KEY_FILE: env.SVC_MASTER_KEY_FILE,
      SVC_ENCRYPTION_MODE: env.SVC_ENCRYPTION_MODE,
    },
    localKeyPath: layout.masterKey,
    keyring: options.keyring ?? osKeyring(),
  });
  const vault = new VaultService({ db: store.db, masterKey });
  await vault.init();
  if (!vault.status.locked) await vault.createVault(null, SYSTEM_VAULT_ID);
  await new SettingsRepository(store.db).setIfAbsent(SPEC_VERSION_SETTING, String(SPEC_VERSION));
  const providers = new ProviderRegistry(
    new CustomProviderRepository(store.db),
    loadBundledProviders,
    new ChangeNotices(runtimeState, "providers-changed"),
  );
  await providers.start();
  const now = () => new Date();
  const connections = new ConnectionService(vault, new ChangeNotices(runtimeState, "connections-changed"));
  await connections.start();
  const audit = new AuditLog({
    db: store.db,
    logPath: layout.auditLog,
    externalLogPath: layout.externalAuditLog,
    now,
  });
  const authSessions = new AuthSessionService(runtimeState, now);
  await authSessions.start();
  const oauthEndpoints = new OAuthEndpointResolver(now);
  const oauthLogins = new OAuthLoginService(
    authSessions,
    connections,
    oauthEndpoints,
    audit,
    new DevicePollLeases(runtimeState),
    now,
  );
  const oauthTokens = new OAuthTokenService(runtimeState, connections, oauthEndpoints, audit, now);
  return {
    config: options.config,
    layout,
    store,
    runtimeState,
    masterKey,
    vault,
    identities: new IdentityRegistry(store.db, { cache: runtimeState.kind === "memory" }),
    principals: new PrincipalService(store.db, vault),
    // Replicas must share token ids; one daemon decides faster in its own memory.
    replayCache:
      runtimeState.kind === "redis" ? new SharedReplayCache(runtimeState) : new MemoryReplayCache(),
    popIssuedNotBefore: 0,
    probes: new ProbeCache(),
    bootstrapSecret: ensureBootstrapSecret(layout.bootstrapSecret),
    instanceId: ensureInstanceId(layout.instanceId),
    startedAt: new Date(),
    now,
    providers,
    connections,
    credentials: new CredentialService(providers, connections, oauthTokens, oauthEndpoints, now),
    authSessions,
    oauthLogins,
    oauthTokens,
    audit,
    browserSessions: new BrowserSessionService(store.db, now),
    dashboardLinks: new OneTimeTokens({
      state: runtimeState,
      kind: "dashboard-link",
      ttlMs: DASHBOARD_LINK_TTL_MS,
      now,
    }),
    claims: new OneTimeTokens({ state: runtimeState, kind: "claim", ttlMs: CLAIM_TTL_MS, now }),
    signInLimits: {
      perEmail: new AttemptLimiter(runtimeState, { kind: "email", ...SIGN_IN_LIMIT_PER_EMAIL }),
      perAddress: new AttemptLimiter(runtimeState, { kind: "address", ...SIGN_IN_LIMIT_PER_ADDRESS }),
    },
    selfRegistrationLimits: {
      perAddress: new AttemptLimiter(runtimeState, {
        kind: "registration-address",
        ...SELF_REGISTRATION_LIMIT_PER_ADDRESS,
      }),
      claimLinks: new FixedWindowRate(runtimeState, { kind: "claim-links", ...CLAIM_LINK_RATE }),
    },
  };
}

/**
 * Runs the daemon in this process until SIGTERM/SIGINT: in-flight requests finish, the store
 * closes, and the pid/state files are removed.
 */
export async function serveForever(options: DaemonStartOptions): Promise<void> {
  const { layout } = options;
  const unlock = lockHome(layout);
  const logger = options.logger ?? daemonLogger();
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon({ ...options, logger });
  } catch (error) {
    unlock();
    throw error;
  }
  const state: DaemonState = {
    pid: process.pid,
    url: daemon.url,
    version: VERSION,
    started_at: daemon.context.startedAt.toISOString(),
    home: layout.home,
  };
  writePrivateFile(layout.daemonState, `${JSON.stringify(state, null, 2)}\n`);
  writeFileSync(layout.daemonPid, `${process.pid}\n`, { mode: 0o600 });
  if (logger) {
    const { store, runtimeState } = daemon.context;
    logger.info(
      {
        url: daemon.url,
        version: VERSION,
        home: layout.home,
        store: store.description,
        runtime_state: runtimeState.description,
      },
      "svc daemon listening",
    );
  }

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      if (logger) logger.info({ signal }, "svc daemon stopping");
      daemon
        .close()
        .catch((error: unknown) => {
          if (logger) logger.error({ err: error }, "error while stopping");
        })
        .finally(() => {
          removeOwnStateFiles(layout);
          unlock();
          resolve();
        });
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
}

/** Removes the pid/state files only if they still describe this process (a successor may own them). */
function removeOwnStateFiles(layout: HomeLayout): void {
  try {
    if (readFileSync(layout.daemonPid, "utf8").trim() !== String(process.pid)) return;
  } catch {
    return;
  }
  rmSync(layout.daemonPid, { force: true });
  rmSync(layout.daemonState, { force: true });
}
