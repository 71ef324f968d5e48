/**
 * The library: what a Node agent uses to get credentials from the daemon without a proxy. It is
 * the CLI's and the proxy's client code (daemon discovery, identity, PoP signing, route rules,
 * credential resolve) behind a small API; it never starts a daemon and never creates an identity.
 */
import { createHash, type KeyObject } from "node:crypto";
import type { Connection } from "../api/connections.ts";
import { AuthenticationFailedError, InvalidInputError, OperationNotAllowedError } from "../core/errors.ts";
import { type HomeLayout, homeLayout, resolveHome } from "../core/paths.ts";
import { isValidHandle } from "../identity/handle.ts";
import { IdentityFiles } from "../identity/identity-files.ts";
import { identityKeyPairFromPrivateKey, type PrivateJwk, privateKeyFromValue } from "../identity/keypair.ts";
import { awsEndpointOf } from "../providers/aws-endpoint.ts";
import type { Provider, ProviderSummary } from "../providers/schema.ts";
import { SIGNATURE_HEADERS, SIGNED_BODY_LIMIT, signRequest, signRequestFor } from "./aws-signing.ts";
import { resolveBaseUrl } from "./base-url.ts";
import { readClientConfig } from "./config.ts";
import { type FetchFunction, fetchWithCredentials } from "./credential-fetch.ts";
import { CredentialResolver, headerOf, resolveRequestFor } from "./credential-resolver.ts";
import { getConnection, getProvider, listConnections, listProviders } from "./daemon-api.ts";
import { DaemonClient } from "./daemon-client.ts";
import { ProviderRoutes } from "./provider-routes.ts";
import { clientFor, loadActiveIdentity } from "./session.ts";

/** An identity given in memory (a container's secret): its handle and its Ed25519 private key. */
export interface IdentityKey {
  handle: string;
  /** PKCS#8 PEM text, JWK JSON text, a JWK object, or a KeyObject. */
  privateKey: string | PrivateJwk | KeyObject;
}

export interface ClientOptions {
  /**
   * The daemon's URL. Default: `SVC_BASE_URL`, else `daemon_base_url` saved in
   * `$SVC_HOME/client/config.json`, else `http://127.0.0.1:7998` (the CLI's order).
   */
  baseUrl?: string;
  /**
   * Who signs the requests. Default: the active identity of `$SVC_HOME` (the CLI's). A string is the
   * handle of another identity there; an `IdentityKey` is used as given and never written anywhere.
   */
  identity?: string | IdentityKey;
  /** The state directory; default `SVC_HOME`, else `~/.svc`. */
  home?: string;
  /** Where `SVC_BASE_URL` and `SVC_HOME` are read; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The connection `fetch` and `headersFor` use per provider instead of its default: `{openai: "work"}`. */
  connections?: Readonly<Record<string, string>>;
  /** The transport under `fetch`; default the global `fetch`. */
  fetch?: FetchFunction;
  /** How long to wait for the daemon per request; default 30 000 ms. */
  timeoutMs?: number;
}

interface Session {
  daemon: DaemonClient;
  routes: ProviderRoutes;
  resolver: CredentialResolver;
}

export class SvcClient {
  readonly #options: ClientOptions;
  readonly #env: NodeJS.ProcessEnv;
  readonly #layout: HomeLayout;
  readonly #connections: ReadonlyMap<string, string>;
  #session: Session | undefined;

  /** The daemon this client talks to. */
  readonly baseUrl: string;

  /**
   * A drop-in `fetch` that adds the credential svc decides belongs on the URL (the proxy's route
   * rules): never on a provider's OAuth endpoints, plain http, or hosts no connected provider owns.
   */
  readonly fetch: FetchFunction;

  readonly connections = {
    /** Your connections (or one provider's), secrets redacted. */
    list: async (options: { provider?: string } = {}): Promise<Connection[]> =>
      listConnections(this.#connect().daemon, options),
    /** One connection, secrets redacted: the provider's default unless `name` is given. */
    get: async (provider: string, name?: string): Promise<Connection> =>
      getConnection(this.#connect().daemon, provider, name),
  };

  readonly providers = {
    /** Every bundled and custom provider: name, display name, auth type, flow, source. */
    list: async (): Promise<ProviderSummary[]> => listProviders(this.#connect().daemon),
    /** A provider's full definition. */
    get: async (name: string): Promise<Provider> => getProvider(this.#connect().daemon, name),
  };

  constructor(options: ClientOptions = {}) {
    this.#options = options;
    this.#env = options.env ?? process.env;
    this.#layout = homeLayout(options.home ?? resolveHome(this.#env));
    this.baseUrl = (
      options.baseUrl ?? resolveBaseUrl(this.#env, readClientConfig(this.#layout.clientConfig))
    ).replace(/\/+$/, "");
    this.#connections = new Map(Object.entries(options.connections ?? {}));
    const transport = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.fetch = fetchWithCredentials((url, request) => this.#credentialFor(url, request), transport);
  }

  /**
   * The header for a provider's connection (its default unless named), as the daemon resolves it
   * now: `{Authorization: "Bearer ..."}`. OAuth tokens are refreshed first when about to expire.
   */
  async headers(provider: string, options: { connection?: string } = {}): Promise<Record<string, string>> {
    const { resolver } = this.#connect();
    const connection = options.connection ?? this.#connections.get(provider);
    return headerOf(await resolver.resolve({ provider, ...(connection ? { connection } : {}) }));
  }

  /**
   * The header `fetch` would add to a request for `url`, or `{}` when none belongs there: no
   * provider routes it, it is an OAuth endpoint, two providers match equally, the matching
   * provider has no connection, or it is not https.
   */
  async headersFor(url: string | URL): Promise<Record<string, string>> {
    const target = new URL(url);
    const provider = await this.#providerFor(target);
    if (provider === undefined) return {};
    if (this.#signs(provider)) {
      throw new OperationNotAllowedError(
        `${provider} signs each request (AWS Signature Version 4): the signature covers the method, headers and body, so no header belongs to a URL alone; send the request with svc.fetch, which has the daemon sign it`,
      );
    }
    const connection = this.#connections.get(provider);
    const { resolver } = this.#connect();
    return headerOf(await resolver.resolve(resolveRequestFor(target, provider, connection)));
  }

  /** The provider whose credential belongs on `url`, if any (https only; the proxy's rules). */
  async #providerFor(url: URL): Promise<string | undefined> {
    if (url.protocol !== "https:") return undefined;
    const { routes } = this.#connect();
    await routes.ready();
    const decision = routes.decide(url);
    return decision.kind === "match" ? decision.provider : undefined;
  }

  #signs(provider: string): boolean {
    return this.#connect().routes.routes.some(
      (route) => route.provider === provider && route.auth_type === "aws_sigv4",
    );
  }

  /** What `fetch` sets on a request: the resolved header, or the daemon's signature of the request. */
  async #credentialFor(url: URL, request: Request): Promise<Record<string, string | null>> {
    const provider = await this.#providerFor(url);
    if (provider === undefined) return {};
    if (!this.#signs(provider)) return this.headersFor(url);
    const body =
      request.body === null ? new Uint8Array() : new Uint8Array(await request.clone().arrayBuffer());
    let payload = createHash("sha256").update(body).digest("hex");
    if (body.length > SIGNED_BODY_LIMIT) {
      if (!awsEndpointOf(url.host)?.s3) {
        throw new InvalidInputError(
          `the request body is larger than ${SIGNED_BODY_LIMIT / 1024 / 1024} MiB, the most svc hashes to sign a request to ${url.host}; only S3 accepts unsigned payloads`,
        );
      }
      payload = "UNSIGNED-PAYLOAD";
    }
    const signed = await signRequest(
      this.#connect().daemon,
      signRequestFor(
        {
          method: request.method,
          host: url.host,
          target: `${url.pathname}${url.search}`,
          headers: request.headers,
        },
        payload,
        provider,
        this.#connections.get(provider),
      ),
    );
    const removed = Object.fromEntries(SIGNATURE_HEADERS.map((name) => [name, null]));
    return { ...removed, ...signed.headers };
  }

  /** Loads the identity and builds the daemon client on first use (so a bad setup fails the call, not the import). */
  #connect(): Session {
    if (!this.#session) {
      const daemon = this.#newDaemonClient();
      this.#session = {
        daemon,
        routes: new ProviderRoutes(daemon),
        resolver: new CredentialResolver(daemon),
      };
    }
    return this.#session;
  }

  #newDaemonClient(): DaemonClient {
    const { baseUrl } = this;
    const layout = this.#layout;
    const timeoutMs = this.#options.timeoutMs;
    const given = this.#options.identity;
    if (given !== undefined && typeof given !== "string") {
      // A key in memory: nothing is registered or written; the daemon must know it already.
      if (!isValidHandle(given.handle)) {
        throw new InvalidInputError(`identity.handle "${given.handle}" is not an identity handle`);
      }
      const { did, privateKey } = identityKeyPairFromPrivateKey(privateKeyFromValue(given.privateKey));
      return new DaemonClient({
        baseUrl,
        identity: { handle: given.handle, did, privateKey },
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      });
    }
    const identity =
      given === undefined ? loadActiveIdentity(layout) : new IdentityFiles(layout.identities).load(given);
    if (!identity) {
      throw new AuthenticationFailedError(
        `no active svc identity in ${layout.home}; run \`svc whoami\` once to create and claim one, or pass \`identity\``,
      );
    }
    return clientFor(layout, this.#env, identity, {
      baseUrl,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  }
}

/** A client for the daemon the CLI would use, signing as the CLI's active identity unless told otherwise. */
export function createClient(options: ClientOptions = {}): SvcClient {
  return new SvcClient(options);
}
