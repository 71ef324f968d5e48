/**
 * `POST /api/credentials/resolve`: the header to inject, asked of the daemon every time (it
 * refreshes OAuth tokens before they expire), so nothing here outlives the answer it got.
 */
import type { ResolvedCredential, ResolveRequest } from "../api/credentials.ts";
import type { DaemonClient } from "./daemon-client.ts";
import type { ResolveChannel } from "./resolve-channel.ts";

/** The resolve request for a request URL that the route table gave to `provider`. */
export function resolveRequestFor(url: URL, provider: string, connection?: string): ResolveRequest {
  // `host` carries the port unless it is 443 (URL drops a default port; IPv6 keeps its brackets).
  return {
    host: url.host,
    path: `${url.pathname}${url.search}`,
    provider,
    ...(connection ? { connection } : {}),
  };
}

/** The header as a record to spread into request headers: `{Authorization: "Bearer ..."}`. */
export function headerOf(credential: ResolvedCredential): Record<string, string> {
  return { [credential.header_name]: credential.header_value };
}

export class CredentialResolver {
  readonly #client: DaemonClient;
  readonly #channel: ResolveChannel | undefined;
  readonly #inFlight = new Map<string, Promise<ResolvedCredential>>();

  /** With a `channel`, resolves go over it, and over plain HTTP while it cannot be opened. */
  constructor(client: DaemonClient, channel?: ResolveChannel) {
    this.#client = client;
    this.#channel = channel;
  }

  /**
   * Asks the daemon for the credential. Requests that arrive while a resolve for the same
   * provider, connection and host is in flight share it: each still gets a value fetched after it
   * arrived, and a burst of N parallel requests costs one round trip instead of N.
   */
  resolve(request: ResolveRequest): Promise<ResolvedCredential> {
    // Without a provider the daemon picks one by host and path, so the path is part of the key.
    const route = request.provider ?? `\u0001${request.path ?? "/"}`;
    const key = `${route}\u0000${request.connection ?? ""}\u0000${request.host ?? ""}`;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#ask(request).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  async #ask(request: ResolveRequest): Promise<ResolvedCredential> {
    const overChannel = await this.#channel?.resolve(request);
    if (overChannel) return overChannel;
    // Each proxied request is audited already; a debug-log line each would be a file write each.
    return this.#client.post<ResolvedCredential>("/api/credentials/resolve", request, { trace: false });
  }
}
