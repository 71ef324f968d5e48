import type { AuditLog } from "../../audit/audit-log.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import {
  AuthenticationFailedError,
  EndpointUnreachableError,
  InvalidInputError,
  OperationNotAllowedError,
  SvcError,
  UnexpectedError,
} from "../../core/errors.ts";
import { authorizationUrl } from "../../flows/oauth/authorize.ts";
import { requireEndpoint } from "../../flows/oauth/endpoints.ts";
import {
  exchangeCode,
  pollDeviceToken,
  registerClient,
  requestDeviceAuthorization,
  type TokenSet,
} from "../../flows/oauth/grants.ts";
import { type OAuthClient, OAuthProtocolError } from "../../flows/oauth/http.ts";
import { offeredFlows } from "../../flows/oauth/offered-flows.ts";
import { newPkcePair, newState } from "../../flows/oauth/pkce.ts";
import { appSetupSteps } from "../../providers/app-setup.ts";
import { availableFlows, type Flow, type OAuthFlow, type Provider } from "../../providers/schema.ts";
import type { AuthSessionService, AuthSessionState, OAuthSessionState } from "./auth-sessions.ts";
import type { ConnectionRecord, ConnectionService, StoredClientCredentials } from "./connections.ts";
import { type DevicePollLeases, leaseMs } from "./device-poll-leases.ts";
import type { OAuthEndpointResolver } from "./oauth-endpoints.ts";
import { assertDocumentedTokenType, clientFromStore, credentialFrom, tokenFormat } from "./oauth-tokens.ts";

/** The callback path; the redirect URI is the daemon's URL plus this. */
export const OAUTH_CALLBACK_PATH = "/auth/callback/oauth";
/** RFC 8628 §3.5: each slow_down adds five seconds to the interval. */
const SLOW_DOWN_STEP_S = 5;
/** Consecutive unreachable polls after which a device login gives up. */
const MAX_POLL_FAILURES = 5;
/** How often a replica looks for device logins whose poller (another replica) stopped. */
const TAKEOVER_SWEEP_MS = 2_000;

/** What a browser brought back to the callback. */
export interface CallbackParams {
  state?: string;
  code?: string;
  error?: string;
  error_description?: string;
  iss?: string;
}

/** The provider's own words, for a person: "access_denied: The user denied the request". */
function refusal(provider: Provider, error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  if (error instanceof OAuthProtocolError) {
    return new AuthenticationFailedError(`${provider.display_name} refused the login: ${error.message}`);
  }
  return new UnexpectedError("the login could not be finished");
}

/**
 * Runs the OAuth logins of auth sessions: PKCE and DCR + PKCE (browser, then the callback) and
 * the device code flow (a poller per session, on the replica that holds the session's lease;
 * another replica takes over the logins of one that stopped). Sessions hold all state.
 */
export class OAuthLoginService {
  readonly #sessions: AuthSessionService;
  readonly #connections: ConnectionService;
  readonly #endpoints: OAuthEndpointResolver;
  readonly #audit: AuditLog;
  readonly #now: () => Date;
  readonly #leases: DevicePollLeases;
  readonly #pollers = new Set<NodeJS.Timeout>();
  #sweeper: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;
  #closed = false;

  constructor(
    sessions: AuthSessionService,
    connections: ConnectionService,
    endpoints: OAuthEndpointResolver,
    audit: AuditLog,
    leases: DevicePollLeases,
    now: () => Date,
  ) {
    this.#leases = leases;
    this.#sessions = sessions;
    this.#connections = connections;
    this.#endpoints = endpoints;
    this.#audit = audit;
    this.#now = now;
  }

  /** Starts looking for device logins left by a replica that stopped, and polls them from here. */
  startTakeover(providerOf: (name: string) => Provider): void {
    this.#sweeper = setInterval(() => {
      this.#takeOver(providerOf).catch(() => undefined);
    }, TAKEOVER_SWEEP_MS);
    this.#sweeper.unref();
  }

  async #takeOver(providerOf: (name: string) => Provider): Promise<void> {
    for (const id of await this.#leases.orphans()) {
      if (this.#closed) return;
      if (!(await this.#leases.claim(id, leaseMs(0)))) continue;
      const session = await this.#sessions.byId(id);
      // A finished session waits for nothing: only an open device login is polled.
      if (session?.waitingFor !== "device_code") {
        await this.#leases.release(id);
        continue;
      }
      this.#schedulePoll(session, providerOf(session.provider), 0);
    }
  }

  /**
   * The flows a provider offers: the definition's, and with an issuer, those its metadata publishes
   * (read only when `wanted` is not among the definition's own). Unreachable metadata offers nothing more.
   */
  async offeredFlows(provider: Provider, baseUrl: string | undefined, wanted: Flow): Promise<Flow[]> {
    const flows = availableFlows(provider);
    if (flows.includes(wanted) || !provider.oauth?.issuer) return flows;
    const metadata = await this.#endpoints.metadata(provider, baseUrl).catch(() => undefined);
    return offeredFlows(provider, metadata);
  }

  /** Prepares a new session: the endpoints, a client (or a request for one), then the flow's first step. */
  async begin(session: AuthSessionState, provider: Provider): Promise<void> {
    try {
      await this.#begin(session, provider);
    } catch (error) {
      await this.#fail(session, provider, error);
      throw refusal(provider, error);
    }
  }

  async #begin(session: AuthSessionState, provider: Provider): Promise<void> {
    const flow = session.flow as OAuthFlow;
    const needed =
      flow === "device_code"
        ? (["device_authorization", "token"] as const)
        : (["authorization", "token"] as const);
    const endpoints = await this.#endpoints.resolve(provider, session.baseUrl, [
      ...needed,
      ...(flow === "dcr_pkce" ? (["registration"] as const) : []),
    ]);
    for (const name of needed) requireEndpoint(endpoints, name, provider.name);
    // Stored with the first step below: nobody else reads this session before that.
    const oauth: OAuthSessionState = { redirectUri: `${session.daemonUrl}${OAUTH_CALLBACK_PATH}`, endpoints };
    session.oauth = oauth;
    const client = await this.#client(session, provider);
    if (!client) {
      oauth.setup = appSetupSteps(provider, {
        flow,
        callbackUrl: oauth.redirectUri,
        scopes: session.scopes ?? provider.oauth?.scopes ?? [],
      });
      await this.#sessions.waitFor(session, "client_credentials", (next) => {
        next.oauth = oauth;
      });
      return;
    }
    await this.#start(session, provider, client);
  }

  /** The client id and secret a person entered (form or JSON): stored for later logins, then the flow starts. */
  async provideClient(
    session: AuthSessionState,
    provider: Provider,
    input: { client_id?: string; client_secret?: string },
  ): Promise<void> {
    if (session.waitingFor !== "client_credentials") {
      throw new OperationNotAllowedError(
        `this login is not waiting for client credentials (it is ${session.status.replaceAll("_", " ")})`,
      );
    }
    const clientId = input.client_id?.trim() ?? "";
    const secret = input.client_secret?.trim() ?? "";
    if (!clientId || /\s/.test(clientId))
      throw new InvalidInputError("enter the client ID of your OAuth app (no spaces)");
    const method = provider.oauth!.token_auth_method;
    if (method !== "none" && !secret) {
      throw new InvalidInputError(`${provider.display_name} needs the client secret of your OAuth app too`);
    }
    const stored: StoredClientCredentials = {
      client_id: clientId,
      ...(secret ? { client_secret: secret } : {}),
      token_auth_method: method,
      source: "user",
      created_at: this.#now().toISOString(),
    };
    try {
      await this.#start(session, provider, clientFromStore(stored));
    } catch (error) {
      // The provider refused the client, or did not answer: the login fails with its words, for
      // whoever waits on it (`svc login`, the dashboard's Connect dialog) as well as for this page.
      // Nothing is stored; the next login asks again.
      await this.#fail(session, provider, error);
      throw refusal(provider, error);
    }
    await this.#connections.saveClientCredentials(session.owner.vaultId, provider.name, stored);
  }

  /** `resume`: a paused session goes on once a client is stored (entered elsewhere meanwhile). */
  async resume(session: AuthSessionState, provider: Provider): Promise<void> {
    if (session.waitingFor !== "client_credentials") return;
    const client = await this.#client(session, provider);
    if (!client) {
      throw new OperationNotAllowedError(
        `${provider.display_name} still needs an OAuth client ID and secret; enter them on the login page first`,
      );
    }
    await this.#start(session, provider, client);
  }

  /**
   * The client for this login. DCR: the one registered earlier for the same endpoint and callback,
   * else a new registration. Otherwise: the one the person stored, else the provider's public id.
   */
  async #client(session: AuthSessionState, provider: Provider): Promise<OAuthClient | undefined> {
    const { vaultId } = session.owner;
    const oauth = session.oauth!;
    const stored = await this.#connections.clientCredentials(vaultId, provider.name);
    if (session.flow === "dcr_pkce") {
      const registration = requireEndpoint(oauth.endpoints, "registration", provider.name);
      if (
        stored?.source === "registered" &&
        stored.registration_endpoint === registration &&
        stored.redirect_uri === oauth.redirectUri
      ) {
        return clientFromStore(stored);
      }
      const registered = await registerClient(registration, {
        redirectUri: oauth.redirectUri,
        clientName: "svc",
        ...(this.#scope(session, provider) ? { scope: this.#scope(session, provider)! } : {}),
      });
      const record: StoredClientCredentials = {
        client_id: registered.client_id,
        ...(registered.client_secret ? { client_secret: registered.client_secret } : {}),
        token_auth_method: registered.token_endpoint_auth_method,
        source: "registered",
        registration_endpoint: registration,
        redirect_uri: oauth.redirectUri,
        created_at: this.#now().toISOString(),
      };
      await this.#connections.saveClientCredentials(vaultId, provider.name, record);
      return clientFromStore(record);
    }
    if (stored?.source === "user") return clientFromStore(stored);
    const publicId = provider.oauth?.client_id;
    return publicId ? { client_id: publicId, auth_method: "none" } : undefined;
  }

  #scope(session: AuthSessionState, provider: Provider): string | undefined {
    const scopes = session.scopes ?? provider.oauth?.scopes ?? [];
    return scopes.length > 0 ? scopes.join(provider.oauth?.scope_separator ?? " ") : undefined;
  }

  async #start(session: AuthSessionState, provider: Provider, client: OAuthClient): Promise<void> {
    const { client_secret: _secret, ...clientWithoutSecret } = client;
    const { setup: _setup, ...rest } = session.oauth!;
    const oauth: OAuthSessionState = { ...rest, client: clientWithoutSecret };
    if (session.flow === "device_code") {
      const device = await requestDeviceAuthorization(
        requireEndpoint(oauth.endpoints, "device_authorization", provider.name),
        client,
        this.#scope(session, provider),
      );
      const expiresAt = new Date(this.#now().getTime() + device.expires_in * 1000);
      oauth.device = { ...device, expiresAt };
      await this.#sessions.waitFor(session, "device_code", (next) => {
        next.oauth = oauth;
        // The provider decides how long a device code lives (no cap of ours).
        next.expiresAt = expiresAt;
      });
      if (
        this.#sessions.isOpen(session) &&
        (await this.#leases.claim(session.id, leaseMs(device.interval)))
      ) {
        this.#schedulePoll(session, provider, 0);
      }
      return;
    }
    const pkce = provider.oauth?.pkce === false ? undefined : newPkcePair();
    oauth.state = await this.#sessions.bindState(session, newState());
    if (pkce) oauth.verifier = pkce.verifier;
    oauth.authorizationUrl = authorizationUrl({
      endpoint: requireEndpoint(oauth.endpoints, "authorization", provider.name),
      clientId: client.client_id,
      redirectUri: oauth.redirectUri,
      state: oauth.state,
      ...(this.#scope(session, provider) ? { scope: this.#scope(session, provider)! } : {}),
      ...(provider.oauth?.scope_param ? { scopeParam: provider.oauth.scope_param } : {}),
      ...(pkce ? { challenge: pkce.challenge } : {}),
      ...(provider.oauth?.authorization_params ? { extra: provider.oauth.authorization_params } : {}),
    });
    await this.#sessions.waitFor(session, "authorization", (next) => {
      next.oauth = oauth;
    });
  }

  /** The session's client with its secret, which only the vault keeps. */
  async #clientOf(session: AuthSessionState, provider: Provider): Promise<OAuthClient> {
    const client = session.oauth!.client!;
    if (client.auth_method === "none") return client;
    const stored = await this.#connections.clientCredentials(session.owner.vaultId, provider.name);
    if (stored?.client_id !== client.client_id || !stored.client_secret) {
      throw new OAuthProtocolError("invalid_client", "the OAuth client of this login is no longer stored", 0);
    }
    return { ...client, client_secret: stored.client_secret };
  }

  /**
   * The browser came back: the state names the session (once). An error from the provider fails
   * the login with its words; a code is exchanged with the PKCE verifier.
   */
  async callback(params: CallbackParams, provider: (name: string) => Provider): Promise<AuthSessionState> {
    const session = await this.#sessions.takeState(params.state);
    const definition = provider(session.provider);
    const oauth = session.oauth!;
    try {
      if (session.waitingFor !== "authorization") {
        throw new OperationNotAllowedError(`this login is already ${session.status.replaceAll("_", " ")}`);
      }
      // RFC 9207: an answer naming another issuer is a mix-up attack or a misconfiguration.
      if (
        params.iss !== undefined &&
        oauth.endpoints.issuer &&
        params.iss.replace(/\/+$/, "") !== oauth.endpoints.issuer.replace(/\/+$/, "")
      ) {
        throw new AuthenticationFailedError(
          `the sign-in answer came from ${params.iss}, not ${oauth.endpoints.issuer}`,
        );
      }
      if (params.error) throw new OAuthProtocolError(params.error, params.error_description, 400);
      if (!params.code)
        throw new AuthenticationFailedError("the sign-in answer carries no authorization code");
      await this.#sessions.processing(session, "authorization");
      const tokens = await exchangeCode(
        requireEndpoint(oauth.endpoints, "token", definition.name),
        await this.#clientOf(session, definition),
        {
          code: params.code,
          redirectUri: oauth.redirectUri,
          ...(oauth.verifier ? { verifier: oauth.verifier } : {}),
        },
        tokenFormat(definition),
      );
      await this.#finish(session, definition, tokens);
    } catch (error) {
      await this.#fail(session, definition, error);
    }
    return session;
  }

  #schedulePoll(session: AuthSessionState, provider: Provider, failures: number): void {
    if (this.#closed) return;
    const device = session.oauth!.device!;
    const timer = setTimeout(() => {
      this.#pollers.delete(timer);
      void this.#poll(session, provider, failures);
    }, device.interval * 1000);
    this.#pollers.add(timer);
  }

  /**
   * One device-code poll (RFC 8628 §3.4–3.5); schedules the next unless the login ended. The
   * session is read afresh each time: another replica may have cancelled it.
   */
  async #poll(session: AuthSessionState, provider: Provider, failures: number): Promise<void> {
    if (this.#closed) return;
    try {
      // Another replica took the login over (this one stalled past its lease): it polls now.
      if (!(await this.#leases.renew(session.id, leaseMs(session.oauth!.device!.interval)))) return;
      if (!(await this.#sessions.reload(session)) || !this.#sessions.isOpen(session)) {
        await this.#leases.release(session.id);
        return;
      }
    } catch (error) {
      // The shared state is unreachable: try again later, as for an unreachable provider.
      if (failures + 1 < MAX_POLL_FAILURES) this.#schedulePoll(session, provider, failures + 1);
      else await this.#fail(session, provider, error).catch(() => undefined);
      return;
    }
    const oauth = session.oauth!;
    const device = oauth.device!;
    if (device.expiresAt.getTime() <= this.#now().getTime()) {
      await this.#expire(session, provider);
      return;
    }
    let tokens: TokenSet;
    try {
      tokens = await pollDeviceToken(
        requireEndpoint(oauth.endpoints, "token", provider.name),
        await this.#clientOf(session, provider),
        device.device_code,
        tokenFormat(provider),
      );
    } catch (error) {
      if (error instanceof OAuthProtocolError && error.error === "authorization_pending") {
        this.#schedulePoll(session, provider, 0);
      } else if (error instanceof OAuthProtocolError && error.error === "slow_down") {
        await this.#sessions.changed(session, (next) => {
          next.oauth!.device!.interval += SLOW_DOWN_STEP_S;
        });
        this.#schedulePoll(session, provider, 0);
      } else if (error instanceof OAuthProtocolError && error.error === "expired_token") {
        await this.#expire(session, provider);
      } else if (error instanceof EndpointUnreachableError && failures + 1 < MAX_POLL_FAILURES) {
        this.#schedulePoll(session, provider, failures + 1);
      } else {
        await this.#fail(session, provider, error);
      }
      if (!this.#sessions.isOpen(session)) await this.#leases.release(session.id);
      return;
    }
    try {
      await this.#sessions.processing(session, "device_code");
      await this.#finish(session, provider, tokens);
    } catch (error) {
      // Cancelled or ended elsewhere meanwhile, the failure is already recorded; else record it.
      await this.#fail(session, provider, error);
    } finally {
      await this.#leases.release(session.id).catch(() => undefined);
    }
  }

  async #expire(session: AuthSessionState, provider: Provider): Promise<void> {
    const ended = await this.#sessions.expire(
      session,
      `the ${provider.display_name} code was not entered in time; run \`svc login ${provider.name}\` again`,
    );
    if (ended) await this.#auditFailure(session, provider, "expired_token");
  }

  /** `provider.login_failed` with `status: failure` and the reason (an OAuth error code or error class). */
  async #auditFailure(session: AuthSessionState, provider: Provider, reason: string): Promise<void> {
    await this.#audit.record({
      event: AUDIT_EVENTS.providerLoginFailed,
      status: "failure",
      provider: provider.name,
      connection: session.connection,
      identity: session.owner.handle,
      principal_id: session.owner.principalId,
      detail: { flow: session.flow, via: session.via, reason },
    });
  }

  /** Stores the tokens as the session's connection; the session completes. */
  async #finish(session: AuthSessionState, provider: Provider, tokens: TokenSet): Promise<void> {
    assertDocumentedTokenType(provider, tokens);
    const now = this.#now();
    const requested = session.scopes ?? provider.oauth?.scopes ?? [];
    const record: ConnectionRecord = {
      provider: provider.name,
      connection: session.connection,
      auth_type: "oauth2",
      flow: session.flow,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      ...(session.baseUrl ? { base_url: session.baseUrl } : {}),
      credential: credentialFrom(tokens, { scopes: requested }, session.oauth!.client!.client_id, now),
    };
    await this.#connections.save(session.owner.vaultId, record, { overwrite: session.force });
    await this.#sessions.complete(session);
    await this.#audit.record(
      {
        event: AUDIT_EVENTS.providerLogin,
        status: "success",
        provider: provider.name,
        connection: session.connection,
        identity: session.owner.handle,
        principal_id: session.owner.principalId,
        detail: { flow: session.flow, via: session.via },
      },
      { secrets: [tokens.access_token, ...(tokens.refresh_token ? [tokens.refresh_token] : [])] },
    );
  }

  async #fail(session: AuthSessionState, provider: Provider, raw: unknown): Promise<void> {
    const error = refusal(provider, raw);
    if (!(await this.#sessions.fail(session, error))) return;
    if (raw instanceof OAuthProtocolError && raw.error === "invalid_client" && session.oauth?.client) {
      // Wrong client credentials would fail every later login too: forget them so the next one asks.
      await this.#connections.forgetClientCredentials(
        session.owner.vaultId,
        provider.name,
        session.oauth.client.client_id,
      );
    }
    await this.#auditFailure(
      session,
      provider,
      raw instanceof OAuthProtocolError ? raw.error : error.errorName,
    );
  }

  /** Stops every device poller (the daemon is closing). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      clearInterval(this.#sweeper);
      for (const timer of this.#pollers) clearTimeout(timer);
      this.#pollers.clear();
      // Another replica picks these logins up at once instead of waiting for the leases to run out.
      await this.#leases.releaseAll().catch(() => undefined);
    })();
    return this.#closing;
  }
}
