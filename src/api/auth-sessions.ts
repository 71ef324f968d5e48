import { z } from "zod";
import { FlowSchema } from "../providers/schema.ts";
import { ConnectionNameSchema, DEFAULT_CONNECTION } from "./connections.ts";

export const AUTH_SESSION_STATUSES = [
  "pending",
  "waiting_for_user",
  "processing",
  "completed",
  "failed",
  "expired",
  "cancelled",
] as const;
export type AuthSessionStatus = (typeof AUTH_SESSION_STATUSES)[number];
export const FINAL_STATUSES: ReadonlySet<AuthSessionStatus> = new Set([
  "completed",
  "failed",
  "expired",
  "cancelled",
]);

export const CreateAuthSessionSchema = z
  .object({
    provider: z.string().min(1).max(64),
    connection: ConnectionNameSchema.default(DEFAULT_CONNECTION),
    flow: FlowSchema.optional().describe("Defaults to the provider's flow."),
    scopes: z.array(z.string().min(1)).optional(),
    base_url: z.string().url().optional().describe("Tenant base URL for multi-tenant providers."),
    force: z.boolean().default(false).describe("Overwrite an existing connection of that name."),
  })
  .meta({ id: "CreateAuthSession" });
export type CreateAuthSession = z.input<typeof CreateAuthSessionSchema>;

export const AuthSessionSchema = z
  .object({
    session_id: z.string(),
    provider: z.string(),
    connection: z.string(),
    flow: FlowSchema,
    status: z.enum(AUTH_SESSION_STATUSES),
    next: z
      .object({ type: z.literal("open_url"), url: z.string() })
      .optional()
      .describe("What the client does next: open this page in a browser."),
    created_at: z.string(),
    expires_at: z.string(),
    error: z
      .object({ error: z.string(), message: z.string() })
      .optional()
      .describe("Why a failed session failed."),
  })
  .meta({ id: "AuthSession" });
export type AuthSession = z.infer<typeof AuthSessionSchema>;

export const SessionParamsSchema = z.object({ session_id: z.string().min(1).max(64) });

export const SessionWaitQuerySchema = z.object({
  wait: z.coerce
    .number()
    .min(0)
    .max(30)
    .optional()
    .describe("Seconds to wait for the status to change before answering (long poll, at most 30)."),
});

/** `POST /api/auth/sessions/{id}/input` as JSON (the CLI's masked prompt or piped stdin). */
export const SessionInputSchema = z
  .object({
    api_key: z.string().max(8192).optional(),
  })
  .meta({ id: "SessionInput" });
export type SessionInput = z.infer<typeof SessionInputSchema>;
