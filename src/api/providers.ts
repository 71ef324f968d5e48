import { z } from "zod";
import { ProviderSchema, ProviderSummarySchema } from "../providers/schema.ts";

/** `GET /api/providers`: every bundled and custom provider, sorted by name. */
export const ProviderListSchema = z.array(ProviderSummarySchema);

export const ProviderNameParamsSchema = z.object({
  provider: z.string().min(1).max(64).describe("Provider name."),
});

export const RegisterProviderQuerySchema = z.object({
  force: z
    .enum(["true", "false"])
    .optional()
    .describe("`true` replaces a custom provider of the same name, or overrides a bundled one."),
});

/** `POST /api/providers` response. */
export const RegisteredProviderSchema = z.object({
  provider: ProviderSchema,
  created: z.boolean().describe("false when an existing custom provider was replaced."),
  overrides_bundled: z.boolean().describe("true when the name is also a bundled provider's."),
});
export type RegisteredProvider = z.infer<typeof RegisteredProviderSchema>;

/** `DELETE /api/providers/{provider}` response. */
export const RemovedProviderSchema = z.object({
  name: z.string(),
  result: z
    .enum(["removed", "reset", "unchanged"])
    .describe(
      "removed: a custom provider is gone; reset: a bundled provider is back to its shipped form; unchanged: it already was.",
    ),
});
export type RemovedProvider = z.infer<typeof RemovedProviderSchema>;
