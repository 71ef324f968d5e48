import type { AuthSession } from "../../src/api/auth-sessions.ts";
import type { DaemonClient } from "../../src/client/daemon-client.ts";
import type { Flow, ProviderDefinitionInput, TokenAuthMethod } from "../../src/providers/schema.ts";
import type { AuthServer } from "./auth-server.ts";

/** A custom OAuth provider whose endpoints are the test authorization server's. */
export function oauthProvider(
  name: string,
  server: AuthServer,
  flow: Exclude<Flow, "api_key">,
  oauth: Record<string, unknown> = {},
): ProviderDefinitionInput {
  const endpoints =
    flow === "dcr_pkce"
      ? { issuer: server.issuer }
      : {
          authorization_url: server.endpoints.authorization,
          token_url: server.endpoints.token,
          device_authorization_url: server.endpoints.device_authorization,
          revocation_url: server.endpoints.revocation,
        };
  return {
    name,
    display_name: `Test ${name}`,
    description: "An OAuth provider backed by the test authorization server.",
    auth_type: "oauth2",
    flow,
    api_url: `api.${name}.example.com`,
    oauth: { ...endpoints, scopes: ["openid", "read"], ...oauth },
    env: [],
    docs_url: `https://docs.${name}.example.com/oauth`,
  };
}

/** A static client at the server for a daemon's callback, and the provider setting that matches it. */
export async function staticClient(
  server: AuthServer,
  daemonUrl: string,
  method: TokenAuthMethod = "client_secret_basic",
): Promise<{ client_id: string; client_secret?: string }> {
  return server.addClient({
    token_endpoint_auth_method: method,
    redirect_uris: [`${daemonUrl}/auth/callback/oauth`],
  });
}

/** Long-polls a session until it leaves `status` (bounded). */
export async function waitForSession(
  client: DaemonClient,
  session: AuthSession,
  until: (current: AuthSession) => boolean,
  timeoutMs = 20_000,
): Promise<AuthSession> {
  const deadline = Date.now() + timeoutMs;
  let current = session;
  while (!until(current)) {
    if (Date.now() > deadline) throw new Error(`session stayed ${current.status}`);
    current = await client.get<AuthSession>(`/api/auth/sessions/${session.session_id}?wait=5`);
  }
  return current;
}
