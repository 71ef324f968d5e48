import { z } from "zod";
import { ERROR_CATALOGUE, type ErrorName } from "../core/errors.ts";

const names = Object.keys(ERROR_CATALOGUE) as [ErrorName, ...ErrorName[]];

export const ErrorBodySchema = z
  .object({ error: z.enum(names), message: z.string() })
  .describe(
    "Every failure: the error class (see the CLI exit-code table) and a message a person can act on.",
  );

/** The `{error, message}` responses of the given HTTP statuses, for a route's `response` schema. */
export function errorResponses<S extends number>(...statuses: S[]): Record<S, typeof ErrorBodySchema> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorBodySchema])) as Record<
    S,
    typeof ErrorBodySchema
  >;
}
