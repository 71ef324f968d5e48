import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  ConnectionGetQuerySchema,
  ConnectionListQuerySchema,
  ConnectionListSchema,
  ConnectionParamsSchema,
  ConnectionSchema,
  KeyComparedSchema,
  KeyComparisonSchema,
  LoggedOutSchema,
  RevokedSchema,
} from "../../api/connections.ts";
import { errorResponses } from "../../api/errors.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { equalSecrets } from "../../core/constant-time.ts";
import { OperationNotAllowedError } from "../../core/errors.ts";
import { type AwsCredentials, parseAwsCredentials } from "../../flows/aws-credentials.ts";
import type { DaemonContext } from "../context.ts";
import { callerScope } from "../services/caller-scope.ts";
import type { StoredCredential } from "../services/connections.ts";
import { connectionView } from "../services/connections.ts";

const errors = errorResponses(400, 401, 403, 404);
const tags = ["connections"];
const security = [{ pop: [] }];

/**
 * Whether a key as pasted equals the stored credential, in constant time: an API key whole; for an
 * AWS connection the pair (JSON or KEY=value lines) by its key id and secret, the parts that make
 * it the same identity (a session token or region may be refreshed or chosen anew).
 */
function sameCredential(stored: StoredCredential, pasted: string): boolean {
  if (stored.type === "api_key") return equalSecrets(stored.api_key, pasted);
  if (stored.type !== "aws_sigv4") return false;
  let given: AwsCredentials;
  try {
    given = parseAwsCredentials(pasted);
  } catch {
    return false;
  }
  const id = equalSecrets(stored.access_key_id, given.access_key_id);
  return equalSecrets(stored.secret_access_key, given.secret_access_key) && id;
}

/** The caller's connections, in the caller's vault. */
export function connectionRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      "/api/connections",
      {
        config: { browser: true },
        schema: {
          summary: "List the caller's connections across bundled and custom providers (secrets redacted)",
          tags,
          security,
          querystring: ConnectionListQuerySchema,
          response: { 200: ConnectionListSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const { provider } = request.query;
        if (provider !== undefined) context.providers.get(provider);
        const all = await context.connections.list(scope.vaultId, context.now(), provider);
        // An agent with a scope sees only what it may use.
        return all.filter((entry) => scope.guard.allows(entry.provider, entry.connection));
      },
    );

    app.get(
      "/api/connections/:provider/:connection",
      {
        config: { browser: true },
        schema: {
          summary: "One connection record; secrets redacted unless `reveal=true` (audited)",
          tags,
          security,
          params: ConnectionParamsSchema,
          querystring: ConnectionGetQuerySchema,
          response: { 200: ConnectionSchema, ...errors },
        },
      },
      async (request, reply) => {
        const scope = await callerScope(context, request);
        const { provider, connection } = request.params;
        context.providers.get(provider);
        await scope.guard.assertAllowed(provider, connection);
        const record = await context.connections.get(scope.vaultId, provider, connection);
        const reveal = request.query.reveal === "true";
        if (reveal) await scope.guard.assertMayReveal(provider, connection);
        if (reveal && request.browserSession) {
          throw new OperationNotAllowedError(
            "the dashboard never shows a stored secret; use `svc connections inspect` in a terminal",
          );
        }
        if (reveal) {
          await scope.audit({
            event: AUDIT_EVENTS.credentialRevealed,
            status: "success",
            provider,
            connection,
          });
          reply.header("cache-control", "no-store");
        }
        const isDefault = await context.connections.isDefault(scope.vaultId, provider, connection);
        return connectionView(record, isDefault, context.now(), reveal);
      },
    );

    app.post(
      "/api/connections/:provider/:connection/logout",
      {
        config: { browser: true },
        schema: {
          summary: "Remove one connection record; the remote provider is not contacted",
          tags,
          security,
          params: ConnectionParamsSchema,
          body: z.unknown().optional(),
          response: { 200: LoggedOutSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const { provider, connection } = request.params;
        context.providers.get(provider);
        await scope.guard.assertAllowed(provider, connection);
        const defaultConnection = await context.connections.remove(scope.vaultId, provider, connection);
        await scope.audit({ event: AUDIT_EVENTS.providerLogout, status: "success", provider, connection });
        return { provider, connection, removed: true as const, default_connection: defaultConnection };
      },
    );

    app.post(
      "/api/connections/:provider/:connection/compare",
      {
        schema: {
          summary: "Whether an API key (or AWS key pair) equals the stored one, without revealing it (PoP)",
          description:
            "For `svc onboard`: a key found in `.env` that is already stored is left alone. Constant-time comparison; nothing is revealed or audited.",
          tags,
          security,
          params: ConnectionParamsSchema,
          body: KeyComparisonSchema,
          response: { 200: KeyComparedSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const { provider, connection } = request.params;
        context.providers.get(provider);
        await scope.guard.assertAllowed(provider, connection);
        const record = await context.connections.get(scope.vaultId, provider, connection);
        return { same: sameCredential(record.credential, request.body.api_key) };
      },
    );

    app.post(
      "/api/connections/:provider/:connection/default",
      {
        config: { browser: true },
        schema: {
          summary: "Make this connection the provider's default",
          tags,
          security,
          params: ConnectionParamsSchema,
          body: z.unknown().optional(),
          response: { 200: ConnectionSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const { provider, connection } = request.params;
        context.providers.get(provider);
        await scope.guard.assertAllowed(provider, connection);
        const record = await context.connections.setDefault(scope.vaultId, provider, connection);
        await scope.audit({
          event: AUDIT_EVENTS.providerDefaultChanged,
          status: "success",
          provider,
          connection,
        });
        return connectionView(record, true, context.now());
      },
    );

    app.post(
      "/api/connections/:provider/revoke",
      {
        schema: {
          summary: "Clear every connection and the client credentials of a provider",
          description:
            "OAuth tokens are revoked at the provider's RFC 7009 endpoint first (refresh token, then access token); whatever the outcome, every connection and the stored OAuth client are then removed locally. API keys are only removed locally.",
          tags,
          security,
          params: z.object({ provider: z.string().min(1).max(64) }),
          body: z.unknown().optional(),
          response: { 200: RevokedSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        const provider = context.providers.get(request.params.provider);
        // Every connection goes: only an identity allowed the whole provider may do that.
        await scope.guard.assertAllowsEvery(provider.name);
        // Revoke remotely first: the stored client the tokens belong to is removed with them.
        const before = await context.connections.records(scope.vaultId, provider.name);
        const remote = [];
        for (const record of before) {
          remote.push({
            connection: record.connection,
            ...(await context.oauthTokens.revoke(scope.vaultId, provider, record)),
          });
        }
        const { records, clientCredentials } = await context.connections.removeAll(
          scope.vaultId,
          provider.name,
        );
        await scope.audit({
          event: AUDIT_EVENTS.providerRevoked,
          status: "success",
          provider: provider.name,
          detail: {
            connections: records.length,
            client_credentials: clientCredentials,
            remote_revoked: remote.filter((entry) => entry.result === "revoked").length,
            remote_failed: remote.filter((entry) => entry.result === "failed").length,
          },
        });
        return {
          provider: provider.name,
          removed_connections: records.map((record) => record.connection),
          removed_client_credentials: clientCredentials,
          remote,
        };
      },
    );
  };
}
