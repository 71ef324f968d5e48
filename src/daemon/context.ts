import type { AuditLog } from "../audit/audit-log.ts";
import type { HomeLayout } from "../core/paths.ts";
import type { ReplayCache } from "../identity/pop-token.ts";
import type { RuntimeState } from "../store/runtime-state.ts";
import type { Store } from "../store/store.ts";
import type { MasterKeyResolution } from "../vault/master-key.ts";
import type { VaultService } from "../vault/vault-service.ts";
import type { AttemptLimiter } from "./services/attempt-limiter.ts";
import type { AuthSessionService } from "./services/auth-sessions.ts";
import type { BrowserSessionService } from "./services/browser-sessions.ts";
import type { ConnectionService } from "./services/connections.ts";
import type { CredentialService } from "./services/credentials.ts";
import type { FixedWindowRate } from "./services/fixed-window-rate.ts";
import type { IdentityRegistry } from "./services/identity-registry.ts";
import type { OAuthLoginService } from "./services/oauth-login.ts";
import type { OAuthTokenService } from "./services/oauth-tokens.ts";
import type { OneTimeTokens } from "./services/one-time-tokens.ts";
import type { PrincipalService } from "./services/principals.ts";
import type { ProbeCache } from "./services/probe-cache.ts";
import type { ProviderRegistry } from "./services/provider-registry.ts";
import type { CheckResult } from "./services/readiness.ts";

export interface DaemonConfig {
  host: string;
  port: number;
  /** Public URL of a hosted daemon (OAuth callbacks, Host header allow-list). */
  publicUrl?: string;
  /**
   * Addresses (IPs or CIDR ranges) of the reverse proxies in front of a hosted daemon: only a
   * request from one of them has its `X-Forwarded-For/-Proto/-Host` believed. Empty: none is.
   */
  trustedProxies?: string[];
}

/** Everything the routes need, built once by the composition root and passed in explicitly. */
export interface DaemonContext {
  config: DaemonConfig;
  layout: HomeLayout;
  store: Store;
  /** Short-lived state replicas share: process memory, or Redis in hosted mode. */
  runtimeState: RuntimeState;
  masterKey: MasterKeyResolution;
  vault: VaultService;
  identities: IdentityRegistry;
  principals: PrincipalService;
  replayCache: ReplayCache;
  /**
   * PoP tokens issued before this (`iat`, seconds) are refused: the embedded daemon's replay cache
   * is memory, lost on restart (see ReplayHorizon). 0 with a shared replay cache (Redis).
   */
  popIssuedNotBefore: number;
  /** Readiness probe results shared among callers for a short time. */
  probes: ProbeCache<CheckResult>;
  bootstrapSecret: Buffer;
  /** Names this home's daemon in `/api/health` (server/instance.id), so CLIs of other homes keep away. */
  instanceId: string;
  startedAt: Date;
  now: () => Date;
  providers: ProviderRegistry;
  connections: ConnectionService;
  credentials: CredentialService;
  authSessions: AuthSessionService;
  oauthLogins: OAuthLoginService;
  oauthTokens: OAuthTokenService;
  audit: AuditLog;
  browserSessions: BrowserSessionService;
  /** One-time dashboard sign-in links a PoP-authenticated CLI asked for (`POST /api/session`). */
  dashboardLinks: OneTimeTokens<{ principalId: string }>;
  /** Claim links for identities registered without local proof (remote daemons). */
  claims: OneTimeTokens<{ handle: string; did: string }>;
  /** Failed dashboard sign-ins per account email, and sign-in or registration attempts per client address. */
  signInLimits: { perEmail: AttemptLimiter; perAddress: AttemptLimiter };
  /** Identities registering without a local proof: per client address, and claim links in all. */
  selfRegistrationLimits: { perAddress: AttemptLimiter; claimLinks: FixedWindowRate };
}

/** A dashboard link is opened right after `svc dashboard` asks for it. */
export const DASHBOARD_LINK_TTL_MS = 60_000;
/** Long enough to sign in (or register) in the browser before confirming a claim. */
export const CLAIM_TTL_MS = 10 * 60_000;
/** Failed sign-ins allowed per email in the window before it waits. */
export const SIGN_IN_LIMIT_PER_EMAIL = { max: 5, windowMs: 15 * 60_000 };
/** Failed sign-ins and registrations allowed per client address (a shared NAT has many people). */
export const SIGN_IN_LIMIT_PER_ADDRESS = { max: 30, windowMs: 15 * 60_000 };
/** Identity registrations without a local proof (each gets a claim link) per client address. */
export const SELF_REGISTRATION_LIMIT_PER_ADDRESS = { max: 30, windowMs: 15 * 60_000 };
/** Unclaimed identities kept at most; past their claim window the oldest make room for new ones. */
export const MAX_UNCLAIMED_IDENTITIES = 1_000;
/** Claim links issued per claim window in all (so at most twice this many are pending at once). */
export const CLAIM_LINK_RATE = { max: 2_000, windowMs: CLAIM_TTL_MS };
