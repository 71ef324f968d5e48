import type { AuditLog } from "../audit/audit-log.ts";
import type { HomeLayout } from "../core/paths.ts";
import type { ReplayCache } from "../identity/pop-token.ts";
import type { Store } from "../store/store.ts";
import type { MasterKeyResolution } from "../vault/master-key.ts";
import type { VaultService } from "../vault/vault-service.ts";
import type { AuthSessionService } from "./services/auth-sessions.ts";
import type { ConnectionService } from "./services/connections.ts";
import type { CredentialService } from "./services/credentials.ts";
import type { IdentityRegistry } from "./services/identity-registry.ts";
import type { OAuthLoginService } from "./services/oauth-login.ts";
import type { OAuthTokenService } from "./services/oauth-tokens.ts";
import type { PrincipalService } from "./services/principals.ts";
import type { ProbeCache } from "./services/probe-cache.ts";
import type { ProviderRegistry } from "./services/provider-registry.ts";
import type { CheckResult } from "./services/readiness.ts";

export interface DaemonConfig {
  host: string;
  port: number;
  /** Public URL of a hosted daemon (OAuth callbacks, Host header allow-list). */
  publicUrl?: string;
}

/** Everything the routes need, built once by the composition root and passed in explicitly. */
export interface DaemonContext {
  config: DaemonConfig;
  layout: HomeLayout;
  store: Store;
  masterKey: MasterKeyResolution;
  vault: VaultService;
  identities: IdentityRegistry;
  principals: PrincipalService;
  replayCache: ReplayCache;
  /** Readiness probe results shared among callers for a short time. */
  probes: ProbeCache<CheckResult>;
  bootstrapSecret: Buffer;
  startedAt: Date;
  now: () => Date;
  providers: ProviderRegistry;
  connections: ConnectionService;
  credentials: CredentialService;
  authSessions: AuthSessionService;
  oauthLogins: OAuthLoginService;
  oauthTokens: OAuthTokenService;
  audit: AuditLog;
}
