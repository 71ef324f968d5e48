import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { AuditLog } from "../../audit/audit-log.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import {
  EndpointUnreachableError,
  RefreshFailedError,
  SvcError,
  TokenExpiredError,
} from "../../core/errors.ts";
import { requireEndpoint } from "../../flows/oauth/endpoints.ts";
import { refreshTokens, revokeToken, type TokenFormat, type TokenSet } from "../../flows/oauth/grants.ts";
import { type OAuthClient, OAuthProtocolError } from "../../flows/oauth/http.ts";
import { documentedTokenTypes, oauthAuthorization, type Provider } from "../../providers/schema.ts";
import type { RuntimeState } from "../../store/runtime-state.ts";
import type { ConnectionRecord, ConnectionService, StoredClientCredentials } from "./connections.ts";
import type { OAuthEndpointResolver } from "./oauth-endpoints.ts";

/**
 * An access token that expires within this margin is refreshed before it is handed out. Tokens
 * that live less than two margins use half their lifetime instead, or every use would refresh.
 */
export const REFRESH_MARGIN_MS = 60_000;

/**
 * How long one replica may hold a connection's refresh lock: longer than a token request takes
 * (the OAuth client's timeout), short enough that a replica that died holding it delays others
 * only briefly.
 */
const REFRESH_LOCK_TTL_MS = 30_000;
/** How often a replica waiting for another's refresh looks whether it has finished. */
const REFRESH_WAIT_POLL_MS = 25;

type OAuthCredential = Extract<ConnectionRecord["credential"], { type: "oauth2" }>;

/** Who a refresh happens for, in its audit event. */
export interface Actor {
  identity: string;
  principal_id: string;
}

export interface RevocationResult {
  result: "revoked" | "not_supported" | "failed";
  message?: string;
}

/** The client a provider's logins use: one the person entered or svc registered, else the provider's public id. */
export function clientFromStore(stored: StoredClientCredentials): OAuthClient {
  return {
    client_id: stored.client_id,
    ...(stored.client_secret ? { client_secret: stored.client_secret } : {}),
    auth_method: stored.client_secret ? stored.token_auth_method : "none",
  };
}

/** Where the provider's token endpoint puts the token. */
export function tokenFormat(provider: Provider): TokenFormat {
  return provider.oauth?.token_path ? { tokenPath: provider.oauth.token_path } : {};
}

/**
 * A token of a type the provider does not document would be sent in a form it refuses (Slack's
 * "bot" as an Authorization scheme): the login or refresh fails instead, naming what came back.
 */
export function assertDocumentedTokenType(provider: Provider, tokens: TokenSet): void {
  if (oauthAuthorization(provider.oauth, tokens.token_type, "x") !== undefined) return;
  throw new OAuthProtocolError(
    "unsupported_token_type",
    `the token endpoint answered token_type "${tokens.token_type.slice(0, 40)}", which the ${provider.name} definition does not document (it documents ${documentedTokenTypes(provider.oauth).join(", ")})`,
    200,
  );
}

/** The credential of an OAuth record as it is stored after a token response. */
export function credentialFrom(
  tokens: TokenSet,
  previous: { refresh_token?: string; scopes: string[] },
  clientId: string,
  now: Date,
): OAuthCredential {
  const refreshToken = tokens.refresh_token ?? previous.refresh_token;
  return {
    type: "oauth2",
    access_token: tokens.access_token,
    // A server that does not rotate keeps the old refresh token valid (RFC 6749 §6).
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
    token_type: tokens.token_type,
    issued_at: now.toISOString(),
    ...(tokens.expires_in
      ? { expires_at: new Date(now.getTime() + tokens.expires_in * 1000).toISOString() }
      : {}),
    scopes: tokens.scopes ?? previous.scopes,
    client_id: clientId,
  };
}

/** Refresh answers that another try with the same refresh token cannot change. */
const PERMANENT_ERRORS: ReadonlySet<string> = new Set([
  "invalid_grant",
  "invalid_client",
  "unauthorized_client",
]);

function loginAgain(provider: string, connection: string): string {
  return `run \`svc login ${provider}${connection === "default" ? "" : ` --connection ${connection}`} --force\``;
}

/** The provider already refused this refresh token; asking again on every request would hammer it. */
function assertNotRefused(provider: Provider, connection: string, credential: OAuthCredential): void {
  if (!credential.refresh_failed || !PERMANENT_ERRORS.has(credential.refresh_failed.error)) return;
  throw new RefreshFailedError(
    `the ${provider.name} token of "${connection}" could not be refreshed (${credential.refresh_failed.error} at ${credential.refresh_failed.at}); ${loginAgain(provider.name, connection)} to sign in again`,
  );
}

function describe(error: unknown): string {
  if (error instanceof OAuthProtocolError) return error.message;
  if (error instanceof SvcError) return error.message;
  return "unexpected error";
}

/**
 * OAuth tokens after login: refresh before expiry (one refresh per connection at a time, shared
 * by every caller that needs it, in this process and, through a lock in the runtime state, in
 * every replica) and RFC 7009 revocation. A failed refresh keeps the record and marks it; nothing
 * here deletes a connection.
 */
export class OAuthTokenService {
  readonly #state: RuntimeState;
  readonly #connections: ConnectionService;
  readonly #endpoints: OAuthEndpointResolver;
  readonly #audit: AuditLog;
  readonly #now: () => Date;
  readonly #inFlight = new Map<string, Promise<ConnectionRecord>>();

  constructor(
    state: RuntimeState,
    connections: ConnectionService,
    endpoints: OAuthEndpointResolver,
    audit: AuditLog,
    now: () => Date,
  ) {
    this.#state = state;
    this.#connections = connections;
    this.#endpoints = endpoints;
    this.#audit = audit;
    this.#now = now;
  }

  #due(credential: OAuthCredential): boolean {
    if (credential.expires_at === undefined) return false;
    const expires = Date.parse(credential.expires_at);
    const lifetime = credential.issued_at
      ? expires - Date.parse(credential.issued_at)
      : Number.POSITIVE_INFINITY;
    return expires - Math.min(REFRESH_MARGIN_MS, lifetime / 2) <= this.#now().getTime();
  }

  #expired(credential: OAuthCredential): boolean {
    return credential.expires_at !== undefined && Date.parse(credential.expires_at) <= this.#now().getTime();
  }

  /** The client to use for a record's tokens: the one they were issued to. */
  async clientFor(
    vaultId: string,
    provider: Provider,
    record: ConnectionRecord,
  ): Promise<OAuthClient | undefined> {
    const credential = record.credential as OAuthCredential;
    const stored = await this.#connections.clientCredentials(vaultId, provider.name);
    if (stored && (!credential.client_id || stored.client_id === credential.client_id))
      return clientFromStore(stored);
    const publicId = provider.oauth?.client_id;
    if (publicId && (!credential.client_id || publicId === credential.client_id)) {
      return { client_id: publicId, auth_method: "none" };
    }
    return undefined;
  }

  /** The record with an access token good for at least a minute: refreshed first when needed. */
  async fresh(
    vaultId: string,
    provider: Provider,
    record: ConnectionRecord,
    actor: Actor,
  ): Promise<ConnectionRecord> {
    const credential = record.credential;
    if (credential.type !== "oauth2" || !this.#due(credential)) return record;
    if (!credential.refresh_token) {
      if (!this.#expired(credential)) return record;
      throw new TokenExpiredError(
        `the ${provider.name} access token of "${record.connection}" expired at ${credential.expires_at} and there is no refresh token; run \`svc login ${provider.name} --connection ${record.connection} --force\``,
      );
    }
    assertNotRefused(provider, record.connection, credential);
    const key = `${vaultId}\u0000${provider.name}\u0000${record.connection}`;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#refreshOnce(vaultId, provider, record.connection, actor).finally(() =>
        this.#inFlight.delete(key),
      );
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  /**
   * Refreshes under the connection's lock in the runtime state: a refresh token may rotate, so two
   * replicas refreshing at once would have one of them use a token the server already replaced.
   * A replica that finds the lock taken waits for the holder and uses what it stored.
   */
  async #refreshOnce(
    vaultId: string,
    provider: Provider,
    connection: string,
    actor: Actor,
  ): Promise<ConnectionRecord> {
    const lock = `refresh-lock:${vaultId}:${provider.name}:${connection}`;
    const owner = randomBytes(12).toString("base64url");
    for (;;) {
      if (await this.#state.set(lock, owner, REFRESH_LOCK_TTL_MS, { ifAbsent: true })) {
        try {
          return await this.#refresh(vaultId, provider, connection, actor);
        } finally {
          await this.#state.delete(lock, owner).catch(() => undefined);
        }
      }
      // Another replica refreshes: wait until it lets go (or its lock runs out), then look.
      while ((await this.#state.get(lock)) !== undefined) await sleep(REFRESH_WAIT_POLL_MS);
      const record = await this.#connections.get(vaultId, provider.name, connection);
      const credential = record.credential as OAuthCredential;
      if (!this.#due(credential) || !credential.refresh_token) return record;
      assertNotRefused(provider, connection, credential);
    }
  }

  async #refresh(
    vaultId: string,
    provider: Provider,
    connection: string,
    actor: Actor,
  ): Promise<ConnectionRecord> {
    // Read again: the previous holder of the single-flight slot may have just saved fresh tokens.
    let record = await this.#connections.get(vaultId, provider.name, connection);
    for (let attempt = 1; ; attempt++) {
      const credential = record.credential as OAuthCredential;
      if (!this.#due(credential) || !credential.refresh_token) return record;
      try {
        return await this.#exchange(vaultId, provider, record, credential, credential.refresh_token, actor);
      } catch (error) {
        if (attempt === 1 && error instanceof OAuthProtocolError && error.error === "invalid_grant") {
          // Another process may have rotated the refresh token: use what the store holds now.
          const latest = await this.#connections.find(vaultId, provider.name, connection);
          const latestCredential = latest?.credential;
          if (
            latestCredential?.type === "oauth2" &&
            latestCredential.refresh_token !== credential.refresh_token
          ) {
            record = latest!;
            continue;
          }
        }
        // The provider is unreachable but the token still works: hand it out, try again next time.
        if (error instanceof EndpointUnreachableError && !this.#expired(credential)) return record;
        throw await this.#failed(vaultId, provider, record, credential, error, actor);
      }
    }
  }

  async #exchange(
    vaultId: string,
    provider: Provider,
    record: ConnectionRecord,
    credential: OAuthCredential,
    refreshToken: string,
    actor: Actor,
  ): Promise<ConnectionRecord> {
    const client = await this.clientFor(vaultId, provider, record);
    if (!client) {
      throw new OAuthProtocolError(
        "invalid_client",
        "the OAuth client these tokens were issued to is no longer stored",
        0,
      );
    }
    const endpoints = await this.#endpoints.resolve(provider, record.base_url, ["token"]);
    const tokens = await refreshTokens(
      requireEndpoint(endpoints, "token", provider.name),
      client,
      refreshToken,
      tokenFormat(provider),
    );
    assertDocumentedTokenType(provider, tokens);
    const now = this.#now();
    const updated: ConnectionRecord = {
      ...record,
      updated_at: now.toISOString(),
      credential: credentialFrom(tokens, credential, client.client_id, now),
    };
    // The rotated refresh token and the new access token are written together, in one entry.
    await this.#connections.save(vaultId, updated, { overwrite: true });
    await this.#audit.record(
      {
        event: AUDIT_EVENTS.providerRefreshed,
        status: "success",
        provider: provider.name,
        connection: record.connection,
        ...actor,
        detail: { rotated: Boolean(tokens.refresh_token && tokens.refresh_token !== refreshToken) },
      },
      { secrets: secretsOf(credential, updated.credential as OAuthCredential) },
    );
    return updated;
  }

  /** Marks the record, audits `provider.refresh_failed`, and says what to do. */
  async #failed(
    vaultId: string,
    provider: Provider,
    record: ConnectionRecord,
    credential: OAuthCredential,
    error: unknown,
    actor: Actor,
  ): Promise<SvcError> {
    const reason = describe(error);
    const code =
      error instanceof OAuthProtocolError
        ? error.error
        : error instanceof SvcError
          ? error.errorName
          : "error";
    const now = this.#now().toISOString();
    await this.#connections
      .save(
        vaultId,
        { ...record, credential: { ...credential, refresh_failed: { at: now, error: code } } },
        { overwrite: true },
      )
      .catch(() => undefined);
    await this.#audit.record(
      {
        event: AUDIT_EVENTS.providerRefreshFailed,
        status: "failure",
        provider: provider.name,
        connection: record.connection,
        ...actor,
        detail: { reason: code },
      },
      { secrets: secretsOf(credential) },
    );
    const again = loginAgain(provider.name, record.connection);
    if (error instanceof EndpointUnreachableError) {
      return new TokenExpiredError(
        `the ${provider.name} access token of "${record.connection}" expired and the provider could not be reached to refresh it (${reason}); try again later or ${again}`,
      );
    }
    return new RefreshFailedError(
      `the ${provider.name} token of "${record.connection}" could not be refreshed (${reason}); the connection is kept, ${again} to sign in again`,
    );
  }

  /**
   * RFC 7009: revokes a record's refresh token (most servers end the whole grant with it) and its
   * access token. Never throws: the caller clears the record locally whatever the outcome.
   */
  async revoke(vaultId: string, provider: Provider, record: ConnectionRecord): Promise<RevocationResult> {
    const credential = record.credential;
    if (credential.type !== "oauth2") {
      return { result: "not_supported", message: "API keys are revoked in the provider's console" };
    }
    try {
      const endpoints = await this.#endpoints.resolve(provider, record.base_url, ["revocation"]);
      if (!endpoints.revocation) {
        return {
          result: "not_supported",
          message: `${provider.name} has no revocation endpoint; revoke access in its settings`,
        };
      }
      const client = await this.clientFor(vaultId, provider, record);
      if (!client)
        return { result: "failed", message: "the OAuth client of these tokens is no longer stored" };
      if (credential.refresh_token) {
        await revokeToken(endpoints.revocation, client, credential.refresh_token, "refresh_token");
      }
      await revokeToken(endpoints.revocation, client, credential.access_token, "access_token");
      return { result: "revoked" };
    } catch (error) {
      return { result: "failed", message: describe(error) };
    }
  }
}

function secretsOf(...credentials: OAuthCredential[]): string[] {
  return credentials.flatMap((credential) => [
    credential.access_token,
    ...(credential.refresh_token ? [credential.refresh_token] : []),
  ]);
}
