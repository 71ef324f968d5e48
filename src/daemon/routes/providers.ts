import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ErrorBodySchema, errorResponses } from "../../api/errors.ts";
import {
  ProviderListSchema,
  ProviderNameParamsSchema,
  RegisteredProviderSchema,
  RegisterProviderQuerySchema,
  RemovedProviderSchema,
} from "../../api/providers.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { OperationNotAllowedError } from "../../core/errors.ts";
import { ProviderSchema, toProviderSummary } from "../../providers/schema.ts";
import type { DaemonContext } from "../context.ts";
import { assertUnrestricted } from "../services/agent-scopes.ts";
import { callerScope, requireAdmin } from "../services/caller-scope.ts";

const errors = errorResponses(400, 401, 403, 404);

/** The provider registry: bundled plus custom definitions. */
export function providerRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      "/api/providers",
      {
        config: { browser: true },
        schema: {
          summary: "List every bundled and custom provider",
          tags: ["providers"],
          security: [{ pop: [] }],
          response: { 200: ProviderListSchema, ...errors },
        },
      },
      async () => context.providers.list().map(toProviderSummary),
    );

    app.get(
      "/api/providers/:provider",
      {
        config: { browser: true },
        schema: {
          summary: "A provider's full definition",
          tags: ["providers"],
          security: [{ pop: [] }],
          params: ProviderNameParamsSchema,
          response: { 200: ProviderSchema, ...errors },
        },
      },
      async (request) => context.providers.get(request.params.provider),
    );

    app.post(
      "/api/providers",
      {
        schema: {
          summary: "Register a custom provider definition (admin)",
          description:
            "The body is a provider definition (docs/providers.md). An invalid one is refused with 400 naming each field and reason; nothing is stored. An existing name needs `force=true` (409 otherwise).",
          tags: ["providers"],
          security: [{ pop: [] }],
          querystring: RegisterProviderQuerySchema,
          // Validated by the registry, so its errors name the field and the reason.
          body: z
            .unknown()
            .meta({ description: "A provider definition (see the ProviderDefinition schema)." }),
          response: {
            200: RegisteredProviderSchema,
            201: RegisteredProviderSchema,
            409: ErrorBodySchema,
            ...errors,
          },
        },
      },
      async (request, reply) => {
        const scope = await callerScope(context, request);
        requireAdmin(scope, "register providers");
        assertUnrestricted(scope.guard, "register providers");
        const result = await context.providers.register(request.body, {
          force: request.query.force === "true",
          now: context.now(),
        });
        await scope.audit({
          event: AUDIT_EVENTS.providerRegistered,
          status: "success",
          provider: result.provider.name,
          detail: { created: result.created, overrides_bundled: result.overridesBundled },
        });
        return reply.code(result.created ? 201 : 200).send({
          provider: result.provider,
          created: result.created,
          overrides_bundled: result.overridesBundled,
        });
      },
    );

    app.delete(
      "/api/providers/:provider",
      {
        schema: {
          summary: "Remove a custom provider, or reset a bundled one to its shipped form (admin)",
          description:
            "The remote provider is not contacted. A custom provider that still has connections in any vault is not removed (403): revoke them first.",
          tags: ["providers"],
          security: [{ pop: [] }],
          params: ProviderNameParamsSchema,
          response: { 200: RemovedProviderSchema, ...errors },
        },
      },
      async (request) => {
        const scope = await callerScope(context, request);
        requireAdmin(scope, "remove providers");
        assertUnrestricted(scope.guard, "remove providers");
        const { provider: name } = request.params;
        const provider = context.providers.get(name);
        const bundled = context.providers.isBundled(name);
        if (provider.source === "custom" && !bundled) {
          const count = await context.connections.countEverywhere(name);
          if (count > 0) {
            throw new OperationNotAllowedError(
              `${name} still has ${count} connection${count === 1 ? "" : "s"}; run \`svc provider revoke ${name}\` first (in every account that has one)`,
            );
          }
        }
        const result = await context.providers.remove(name);
        await scope.audit({
          event: AUDIT_EVENTS.providerRemoved,
          status: "success",
          provider: name,
          detail: { result },
        });
        return { name, result };
      },
    );
  };
}
