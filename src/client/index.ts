/**
 * The `svc` package's entry point (`import { createClient } from "svc-credentials"`): the daemon client the
 * CLI and the proxy use, for Node programs that want credentials without a proxy. docs/library.md
 * describes it. Nothing reachable from here opens the vault, the database or a server.
 */
export type { Connection } from "../api/connections.ts";
export {
  AuthenticationFailedError,
  ConnectionAlreadyExistsError,
  ConnectionNotFoundError,
  CredentialMissingError,
  DaemonUnavailableError,
  EndpointUnreachableError,
  ERROR_CATALOGUE,
  type ErrorName,
  InputCancelledError,
  InvalidInputError,
  NotFoundError,
  OperationNotAllowedError,
  ProviderAlreadyRegisteredError,
  ProviderNotFoundError,
  RateLimitedError,
  RefreshFailedError,
  SvcError,
  TokenExpiredError,
  UnexpectedError,
  VaultUnavailableError,
} from "../core/errors.ts";
export type { PrivateJwk } from "../identity/keypair.ts";
export type { Provider, ProviderSummary } from "../providers/schema.ts";
export type { FetchFunction } from "./credential-fetch.ts";
export { type ClientOptions, createClient, type IdentityKey, SvcClient } from "./svc-client.ts";
