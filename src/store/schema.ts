import type { Generated } from "kysely";

/** Tables of the relational store. Timestamps are ISO-8601 text so SQLite and PostgreSQL agree. */
export interface Database {
  settings: SettingsTable;
  principals: PrincipalsTable;
  identities: IdentitiesTable;
  vaults: VaultsTable;
  vault_entries: VaultEntriesTable;
  custom_providers: CustomProvidersTable;
  audit_events: AuditEventsTable;
  browser_sessions: BrowserSessionsTable;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface PrincipalsTable {
  id: string;
  role: "admin" | "user";
  email: string | null;
  password_hash: string | null;
  created_at: string;
}

export interface IdentitiesTable {
  handle: string;
  did: string;
  principal_id: string | null;
  created_at: string;
  claimed_at: string | null;
  /** JSON array of `provider` or `provider:connection` entries; null: every connection. */
  scope: string | null;
  revoked_at: string | null;
  /** Who revoked it: the handle of the identity, or the dashboard account, that did. */
  revoked_by: string | null;
}

export interface VaultsTable {
  id: string;
  principal_id: string | null;
  /** The vault's data key, sealed under the key-encryption key derived from the master secret. */
  wrapped_key: string;
  created_at: string;
}

export interface VaultEntriesTable {
  vault_id: string;
  key: string;
  /** AES-256-GCM envelope, base64; associated data binds it to (vault_id, key). */
  value: string;
  updated_at: string;
  revision: Generated<number>;
}

export interface CustomProvidersTable {
  name: string;
  /** The provider definition JSON as registered (before defaults are applied). */
  definition: string;
  created_at: string;
  updated_at: string;
}

export interface AuditEventsTable {
  /** Time-ordered id (`evt_<ms>_<random>`): the keyset tie-breaker after `timestamp`. */
  id: string;
  timestamp: string;
  event: string;
  source: "internal" | "external";
  status: string;
  provider: string | null;
  connection: string | null;
  identity: string | null;
  principal_id: string | null;
  /** A small JSON object of extra, non-secret fields (passed the secret guard). */
  detail: string | null;
}

export interface BrowserSessionsTable {
  /** SHA-256 of the cookie's token: a copy of the database holds no usable session. */
  id: string;
  principal_id: string;
  created_at: string;
  expires_at: string;
}
