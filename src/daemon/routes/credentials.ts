import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import {
  ProxyRoutesSchema,
  ResolvedCredentialSchema,
  ResolveRequestSchema,
  SignedRequestSchema,
  SignRequestSchema,
} from "../../api/credentials.ts";
import { errorResponses } from "../../api/errors.ts";
import type { DaemonContext } from "../context.ts";
import { callerScope } from "../services/caller-scope.ts";

const errors = errorResponses(400, 401, 403, 404, 409);

/** What the proxy (and the library) ask: which provider a URL belongs to, and its credential. */
export function credentialRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      "/api/proxy/routes",
      {
        schema: {
          summary: "The provider-to-host routing table, with OAuth endpoints and the caller's connections",
          tags: ["proxy"],
          security: [{ pop: [] }],
          response: { 200: ProxyRoutesSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        return { routes: await context.credentials.routes(scope.vaultId, scope.guard) };
      },
    );

    app.post(
      "/api/credentials/resolve",
      {
        schema: {
          summary: "Resolve the header to inject for a host and path (or a named provider)",
          description:
            "Most specific route wins (host or URL prefix over regex, longer path prefix first); the provider's default connection unless one is named. Never for a provider's OAuth endpoints. The response holds the secret: it is never cached.",
          tags: ["proxy"],
          security: [{ pop: [] }],
          body: ResolveRequestSchema,
          response: { 200: ResolvedCredentialSchema, ...errors },
        },
      },
      async (request, reply) => {
        const scope = await callerScope(context, request);
        reply.header("cache-control", "no-store");
        return context.credentials.resolve(
          scope.vaultId,
          request.body,
          {
            identity: scope.caller.handle,
            principal_id: scope.principal.id,
          },
          scope.guard,
        );
      },
    );

    app.post(
      "/api/credentials/sign",
      {
        schema: {
          summary: "Sign an AWS request (Signature Version 4) for an aws_sigv4 provider",
          description:
            "The caller sends what SigV4 covers (method, host, wire path, raw query, the headers to sign and the payload's SHA-256, never the body); the daemon picks the provider and connection like resolve, reads the service and region from the host, signs with the secret access key (which never leaves the daemon) and returns the headers to set. S3 gets x-amz-content-sha256 and may be sent UNSIGNED-PAYLOAD; other services need the hash. Presigned URLs and chunked (streaming) signatures are not offered.",
          tags: ["proxy"],
          security: [{ pop: [] }],
          body: SignRequestSchema,
          response: { 200: SignedRequestSchema, ...errors },
        },
      },
      async (request, reply) => {
        const scope = await callerScope(context, request);
        reply.header("cache-control", "no-store");
        return context.credentials.sign(
          scope.vaultId,
          request.body,
          {
            identity: scope.caller.handle,
            principal_id: scope.principal.id,
          },
          scope.guard,
        );
      },
    );
  };
}
