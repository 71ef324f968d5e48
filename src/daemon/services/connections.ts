import type { Connection } from "../../api/connections.ts";
import { ConnectionAlreadyExistsError, ConnectionNotFoundError } from "../../core/errors.ts";
import { redactSecret } from "../../core/redact.ts";
import type { AuthType, Flow, TokenAuthMethod } from "../../providers/schema.ts";
import type { VaultService } from "../../vault/vault-service.ts";
import type { ChangeNotices } from "./change-notices.ts";

/**
 * Connection records live encrypted in the owner's vault, one entry each:
 *
 *   connections/<provider>/<connection>  the record below (credential included)
 *   defaults/<provider>                  the name of the provider's default connection
 *   client_credentials/<provider>        OAuth client id and secret entered by the user
 *
 * Entry keys are not secret (names only), so listing needs no decryption.
 */
const CONNECTIONS = "connections/";
const DEFAULTS = "defaults/";
const CLIENT_CREDENTIALS = "client_credentials/";

export type StoredCredential =
  | { type: "api_key"; api_key: string }
  | {
      type: "aws_sigv4";
      access_key_id: string;
      secret_access_key: string;
      session_token?: string;
      /** The default region, given to `svc run` children as AWS_REGION. */
      region?: string;
    }
  | {
      type: "oauth2";
      access_token: string;
      refresh_token?: string;
      token_type: string;
      /** ISO time the access token expires; absent when the server did not say. */
      expires_at?: string;
      /** ISO time the access token was obtained (for its lifetime). */
      issued_at?: string;
      scopes: string[];
      /** The client the tokens were issued to: a refresh must use the same one. */
      client_id?: string;
      /** Set when the last refresh was refused; cleared by the next successful one. */
      refresh_failed?: { at: string; error: string };
    };

/** An OAuth client for a provider: entered by the person, or registered by svc (RFC 7591). */
export interface StoredClientCredentials {
  client_id: string;
  client_secret?: string;
  token_auth_method: TokenAuthMethod;
  source: "user" | "registered";
  /** Registered clients: where and for which callback; either changing means registering again. */
  registration_endpoint?: string;
  redirect_uri?: string;
  created_at: string;
}

export interface ConnectionRecord {
  provider: string;
  connection: string;
  auth_type: AuthType;
  flow: Flow;
  created_at: string;
  updated_at: string;
  base_url?: string;
  credential: StoredCredential;
}

/** Per provider: the caller's connection names and default, and the base URLs they use. */
export interface ProviderConnections {
  names: string[];
  defaultConnection: string | null;
  baseUrls: string[];
  /** AWS connections' default regions, by connection name (not secret). */
  regions: Record<string, string>;
}

function connectionKey(provider: string, connection: string): string {
  return `${CONNECTIONS}${provider}/${connection}`;
}

function expiresAt(record: ConnectionRecord): string | null {
  return record.credential.type === "oauth2" ? (record.credential.expires_at ?? null) : null;
}

/** The API view of a record: secrets redacted unless `reveal`. */
export function connectionView(
  record: ConnectionRecord,
  isDefault: boolean,
  now: Date,
  reveal = false,
): Connection {
  const { credential } = record;
  const expiry = expiresAt(record);
  let status: Connection["status"] = "active";
  if (credential.type === "oauth2" && credential.refresh_failed) status = "refresh_failed";
  else if (credential.type === "oauth2" && expiry && Date.parse(expiry) <= now.getTime()) {
    status = credential.refresh_token ? "refresh_due" : "expired";
  }
  return {
    provider: record.provider,
    connection: record.connection,
    auth_type: record.auth_type,
    flow: record.flow,
    is_default: isDefault,
    status,
    created_at: record.created_at,
    updated_at: record.updated_at,
    expires_at: expiry,
    ...(credential.type === "oauth2" && credential.refresh_failed
      ? { refresh_error: `${credential.refresh_failed.error} (${credential.refresh_failed.at})` }
      : {}),
    ...(record.base_url ? { base_url: record.base_url } : {}),
    credential: credentialView(credential, reveal),
  };
}

function credentialView(credential: StoredCredential, reveal: boolean): Connection["credential"] {
  switch (credential.type) {
    case "api_key":
      return {
        type: "api_key",
        redacted: redactSecret(credential.api_key),
        ...(reveal ? { api_key: credential.api_key } : {}),
      };
    case "aws_sigv4":
      return {
        type: "aws_sigv4",
        access_key_id: credential.access_key_id,
        redacted: redactSecret(credential.secret_access_key),
        has_session_token: Boolean(credential.session_token),
        region: credential.region ?? null,
        ...(reveal
          ? {
              secret_access_key: credential.secret_access_key,
              ...(credential.session_token ? { session_token: credential.session_token } : {}),
            }
          : {}),
      };
    case "oauth2":
      return {
        type: "oauth2",
        token_type: credential.token_type,
        scopes: credential.scopes,
        has_refresh_token: Boolean(credential.refresh_token),
        ...(reveal
          ? {
              access_token: credential.access_token,
              ...(credential.refresh_token ? { refresh_token: credential.refresh_token } : {}),
            }
          : {}),
      };
  }
}

/**
 * Reads and writes connection records. Each provider has one default connection: the first one
 * saved, until `setDefault` moves it; when the default is removed the oldest remaining one takes
 * over. An in-memory index per vault (names, defaults, base URLs) serves the credential resolve
 * hot path and is dropped on every write through this service, in every replica.
 */
export class ConnectionService {
  readonly #vault: VaultService;
  readonly #notices: ChangeNotices;
  readonly #index = new Map<string, Promise<Map<string, ProviderConnections>>>();

  constructor(vault: VaultService, notices: ChangeNotices) {
    this.#vault = vault;
    this.#notices = notices;
  }

  /** Drops a vault's index whenever any replica writes to it. */
  async start(): Promise<void> {
    await this.#notices.listen((vaultId) => this.dropIndex(vaultId));
  }

  /** Whether the index may lag behind writes of other replicas (hosted mode). */
  get mayBeStale(): boolean {
    return this.#notices.shared;
  }

  /** Builds the vault's index afresh on its next use (here only). */
  dropIndex(vaultId: string): void {
    this.#index.delete(vaultId);
  }

  /** After a write: forgets the vault's index here, and tells the other replicas to. */
  async #forgetIndex(vaultId: string): Promise<void> {
    this.#index.delete(vaultId);
    await this.#notices.announce(vaultId);
  }

  async #names(vaultId: string, provider?: string): Promise<Array<{ provider: string; connection: string }>> {
    const keys = await this.#vault.list(vaultId, provider ? `${CONNECTIONS}${provider}/` : CONNECTIONS);
    return keys.map((key) => {
      const [name, connection] = key.slice(CONNECTIONS.length).split("/", 2) as [string, string];
      return { provider: name, connection };
    });
  }

  async #default(vaultId: string, provider: string): Promise<string | null> {
    return (await this.#vault.get<string>(vaultId, `${DEFAULTS}${provider}`)) ?? null;
  }

  /** Every record of the vault (or of one provider), sorted by provider then connection. */
  async records(vaultId: string, provider?: string): Promise<ConnectionRecord[]> {
    const records: ConnectionRecord[] = [];
    for (const { provider: name, connection } of await this.#names(vaultId, provider)) {
      const record = await this.#vault.get<ConnectionRecord>(vaultId, connectionKey(name, connection));
      if (record) records.push(record);
    }
    return records;
  }

  /** The API views of every connection (or one provider's), with `is_default` set. */
  async list(vaultId: string, now: Date, provider?: string): Promise<Connection[]> {
    const records = await this.records(vaultId, provider);
    const defaults = new Map<string, string | null>();
    for (const record of records) {
      if (!defaults.has(record.provider))
        defaults.set(record.provider, await this.#default(vaultId, record.provider));
    }
    return records.map((record) =>
      connectionView(record, defaults.get(record.provider) === record.connection, now),
    );
  }

  async find(vaultId: string, provider: string, connection: string): Promise<ConnectionRecord | undefined> {
    return this.#vault.get<ConnectionRecord>(vaultId, connectionKey(provider, connection));
  }

  async get(vaultId: string, provider: string, connection: string): Promise<ConnectionRecord> {
    const record = await this.find(vaultId, provider, connection);
    if (!record) throw await this.#notFound(vaultId, provider, connection);
    return record;
  }

  async #notFound(vaultId: string, provider: string, connection: string): Promise<Error> {
    const others = (await this.#names(vaultId, provider)).map((entry) => entry.connection);
    const hint =
      others.length > 0
        ? `${provider} has ${others.map((name) => `"${name}"`).join(", ")}`
        : `run \`svc login ${provider}${connection === "default" ? "" : ` --connection ${connection}`}\``;
    return new ConnectionNotFoundError(`no connection "${connection}" for ${provider}; ${hint}`);
  }

  async isDefault(vaultId: string, provider: string, connection: string): Promise<boolean> {
    return (await this.#default(vaultId, provider)) === connection;
  }

  /**
   * Saves a record. Without `overwrite` an existing record of that name is an error, decided
   * atomically, so of concurrent first saves exactly one wins. The first connection of a provider
   * becomes its default.
   */
  async save(vaultId: string, record: ConnectionRecord, options: { overwrite: boolean }): Promise<void> {
    const key = connectionKey(record.provider, record.connection);
    try {
      if (options.overwrite) {
        const existing = await this.find(vaultId, record.provider, record.connection);
        await this.#vault.put(
          vaultId,
          key,
          existing ? { ...record, created_at: existing.created_at } : record,
        );
      } else if (!(await this.#vault.putIfAbsent(vaultId, key, record))) {
        throw new ConnectionAlreadyExistsError(
          `${record.provider} already has a connection "${record.connection}"; log in with --force to replace it, or pick another --connection name`,
        );
      }
      await this.#vault.putIfAbsent(vaultId, `${DEFAULTS}${record.provider}`, record.connection);
    } finally {
      await this.#forgetIndex(vaultId);
    }
  }

  /** Removes one record; returns the provider's default afterwards. */
  async remove(vaultId: string, provider: string, connection: string): Promise<string | null> {
    try {
      if (!(await this.#vault.delete(vaultId, connectionKey(provider, connection)))) {
        throw await this.#notFound(vaultId, provider, connection);
      }
      const current = await this.#default(vaultId, provider);
      if (current !== connection) return current;
      return await this.#promoteOldest(vaultId, provider);
    } finally {
      await this.#forgetIndex(vaultId);
    }
  }

  async #promoteOldest(vaultId: string, provider: string): Promise<string | null> {
    const remaining = await this.records(vaultId, provider);
    remaining.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
    const next = remaining[0]?.connection ?? null;
    if (next) await this.#vault.put(vaultId, `${DEFAULTS}${provider}`, next);
    else await this.#vault.delete(vaultId, `${DEFAULTS}${provider}`);
    return next;
  }

  async setDefault(vaultId: string, provider: string, connection: string): Promise<ConnectionRecord> {
    const record = await this.get(vaultId, provider, connection);
    await this.#vault.put(vaultId, `${DEFAULTS}${provider}`, connection);
    await this.#forgetIndex(vaultId);
    return record;
  }

  /** Removes every connection, the default and the client credentials of a provider. */
  async removeAll(
    vaultId: string,
    provider: string,
  ): Promise<{ records: ConnectionRecord[]; clientCredentials: boolean }> {
    try {
      const records = await this.records(vaultId, provider);
      for (const record of records)
        await this.#vault.delete(vaultId, connectionKey(provider, record.connection));
      await this.#vault.delete(vaultId, `${DEFAULTS}${provider}`);
      const clientCredentials = await this.#vault.delete(vaultId, `${CLIENT_CREDENTIALS}${provider}`);
      return { records, clientCredentials };
    } finally {
      await this.#forgetIndex(vaultId);
    }
  }

  /** The OAuth client stored for a provider, if any. */
  async clientCredentials(vaultId: string, provider: string): Promise<StoredClientCredentials | undefined> {
    return this.#vault.get<StoredClientCredentials>(vaultId, `${CLIENT_CREDENTIALS}${provider}`);
  }

  async saveClientCredentials(
    vaultId: string,
    provider: string,
    client: StoredClientCredentials,
  ): Promise<void> {
    await this.#vault.put(vaultId, `${CLIENT_CREDENTIALS}${provider}`, client);
  }

  /** Removes the provider's stored client if it is still the one with this id. */
  async forgetClientCredentials(vaultId: string, provider: string, clientId: string): Promise<void> {
    if ((await this.clientCredentials(vaultId, provider))?.client_id === clientId) {
      await this.#vault.delete(vaultId, `${CLIENT_CREDENTIALS}${provider}`);
    }
  }

  /** Per provider: connection names, the default and base URLs (cached until the next write). */
  index(vaultId: string): Promise<Map<string, ProviderConnections>> {
    let cached = this.#index.get(vaultId);
    if (!cached) {
      cached = this.#buildIndex(vaultId);
      this.#index.set(vaultId, cached);
      cached.catch(() => this.#index.delete(vaultId));
    }
    return cached;
  }

  async #buildIndex(vaultId: string): Promise<Map<string, ProviderConnections>> {
    const index = new Map<string, ProviderConnections>();
    for (const record of await this.records(vaultId)) {
      let entry = index.get(record.provider);
      if (!entry) {
        entry = {
          names: [],
          defaultConnection: await this.#default(vaultId, record.provider),
          baseUrls: [],
          regions: {},
        };
        index.set(record.provider, entry);
      }
      entry.names.push(record.connection);
      if (record.base_url && !entry.baseUrls.includes(record.base_url)) entry.baseUrls.push(record.base_url);
      if (record.credential.type === "aws_sigv4" && record.credential.region)
        entry.regions[record.connection] = record.credential.region;
    }
    return index;
  }

  /** How many connections to `provider` exist in any vault (names only; nothing is decrypted). */
  async countEverywhere(provider: string): Promise<number> {
    return this.#vault.countKeys(`${CONNECTIONS}${provider}/`);
  }
}
