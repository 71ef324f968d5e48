import { z } from "zod";
import { InvalidInputError } from "../core/errors.ts";

/**
 * An agent's scope: the providers, or single connections of a provider, an identity may use.
 * `null` is unrestricted (every connection of its principal); `[]` allows nothing. Entries are
 * `provider` (all its connections) or `provider:connection`, kept sorted and without overlap.
 */
export type AgentScope = readonly string[] | null;

const ENTRY = /^([a-z0-9][a-z0-9_-]{0,63})(?::([A-Za-z0-9][A-Za-z0-9_.-]{0,63}))?$/;

/** Splits `openai,github:work` lists (repeatable) into checked entries. */
export function parseScopeEntries(values: readonly string[]): string[] {
  const entries = values.flatMap((value) => value.split(",")).map((entry) => entry.trim());
  for (const entry of entries) {
    if (!ENTRY.test(entry)) {
      throw new InvalidInputError(
        `"${entry}" is not a scope entry; write a provider (openai) or a provider and connection (github:work)`,
      );
    }
  }
  return entries;
}

function providerOf(entry: string): string {
  return entry.split(":")[0]!;
}

/** Sorted, deduplicated, and without `github:work` where `github` is already allowed. */
function normalised(entries: Iterable<string>): string[] {
  const all = new Set(entries);
  return [...all].filter((entry) => !(entry.includes(":") && all.has(providerOf(entry)))).sort();
}

/** The scope after `svc agent allow`: an unrestricted identity becomes limited to `entries`. */
export function allowInScope(scope: AgentScope, entries: readonly string[]): string[] {
  return normalised([...(scope ?? []), ...parseScopeEntries(entries)]);
}

/** The scope after `svc agent deny`: `github` removes every github entry, `github:work` only that one. */
export function denyInScope(scope: AgentScope, entries: readonly string[]): string[] {
  if (scope === null) {
    throw new InvalidInputError(
      "this agent is unrestricted; list what it may use with `svc agent allow <handle> <provider[:connection]>...`",
    );
  }
  const removed = parseScopeEntries(entries);
  for (const entry of removed) {
    if (entry.includes(":") && scope.includes(providerOf(entry))) {
      throw new InvalidInputError(
        `the agent may use every ${providerOf(entry)} connection; deny ${providerOf(entry)}, then allow the connections it needs`,
      );
    }
  }
  return normalised(
    scope.filter((entry) => !removed.some((gone) => gone === entry || gone === providerOf(entry))),
  );
}

/** Whether the scope lets the identity use `provider` (any connection when none is named). */
export function scopeAllows(scope: AgentScope, provider: string, connection?: string): boolean {
  if (scope === null) return true;
  if (scope.includes(provider)) return true;
  if (connection === undefined) return scope.some((entry) => providerOf(entry) === provider);
  return scope.includes(`${provider}:${connection}`);
}

/** How a scope reads in messages and tables. */
export function describeScope(scope: AgentScope): string {
  if (scope === null) return "unrestricted";
  return scope.length === 0 ? "nothing" : scope.join(", ");
}

const ScopeEntrySchema = z.string().regex(ENTRY).describe("`provider` or `provider:connection`.");

export const AgentScopeSchema = z
  .array(ScopeEntrySchema)
  .max(256)
  .nullable()
  .describe("What the identity may use; null: every connection of its principal, []: nothing.");

export const AgentParamsSchema = z.object({ handle: z.string().min(3).max(64) });

export const AgentScopeUpdateSchema = z.object({ scope: AgentScopeSchema });

export const AgentSchema = z
  .object({
    handle: z.string(),
    did: z.string(),
    principal_id: z.string().nullable(),
    created_at: z.string(),
    claimed_at: z.string().nullable(),
    last_seen: z.string().nullable().describe("The time of the identity's latest audit event."),
    scope: AgentScopeSchema,
    revoked_at: z.string().nullable(),
    revoked_by: z.string().nullable().describe("The identity handle or dashboard account that revoked it."),
    is_caller: z.boolean().describe("Whether this is the identity making the request."),
  })
  .meta({ id: "Agent" });
export type AgentRecord = z.infer<typeof AgentSchema>;

export const AgentListSchema = z.object({ agents: z.array(AgentSchema) });

export const AgentListQuerySchema = z.object({
  all: z.enum(["true", "false"]).optional().describe("Admins: every principal's identities."),
});

/** Requests per provider and outcome in one window. */
export const ActivityCountSchema = z.object({
  provider: z.string().nullable(),
  status: z.string().describe("success, failure, error (the proxy's outcome)."),
  count: z.number(),
});

export const AgentActivitySchema = z
  .object({
    handle: z.string(),
    last_seen: z.string().nullable(),
    last_24h: z.array(ActivityCountSchema),
    last_7d: z.array(ActivityCountSchema),
  })
  .meta({ id: "AgentActivity" });
export type AgentActivity = z.infer<typeof AgentActivitySchema>;
