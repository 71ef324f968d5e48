import { z } from "zod";
import { FlowSchema } from "../providers/schema.ts";
import { AUTH_SESSION_STATUSES } from "./auth-session-states.ts";
import { ConnectionNameSchema, DEFAULT_CONNECTION } from "./connections.ts";

export { AUTH_SESSION_STATUSES, type AuthSessionStatus, FINAL_STATUSES } from "./auth-session-states.ts";

export const CreateAuthSessionSchema = z
  .object({
    provider: z.string().min(1).max(64),
    connection: ConnectionNameSchema.default(DEFAULT_CONNECTION),
    flow: FlowSchema.optional().describe("Defaults to the provider's flow."),
    scopes: z.array(z.string().min(1)).optional(),
    base_url: z.string().url().optional().describe("Tenant base URL for multi-tenant providers."),
    force: z.boolean().default(false).describe("Overwrite an existing connection of that name."),
    via: z
      .enum(["login", "onboard"])
      .optional()
      .describe("Which command started it (`svc login` by default); the audit events say so."),
  })
  .meta({ id: "CreateAuthSession" });
export type CreateAuthSession = z.input<typeof CreateAuthSessionSchema>;

/** What an open session waits for; the client tells the person what to do. */
export const WAITING_FOR = ["api_key", "client_credentials", "authorization", "device_code"] as const;
export type WaitingFor = (typeof WAITING_FOR)[number];

export const DeviceCodeSchema = z
  .object({
    user_code: z.string().describe("The code the person enters at verification_uri."),
    verification_uri: z.string(),
    verification_uri_complete: z.string().optional().describe("verification_uri with the code filled in."),
    expires_at: z.string().describe("When the code stops working (the server's expires_in)."),
    interval: z.number().describe("Seconds between the daemon's polls (grows by 5 on slow_down)."),
  })
  .meta({ id: "DeviceCode" });
export type DeviceCode = z.infer<typeof DeviceCodeSchema>;

export const AuthSessionSchema = z
  .object({
    session_id: z.string(),
    provider: z.string(),
    connection: z.string(),
    flow: FlowSchema,
    status: z.enum(AUTH_SESSION_STATUSES),
    revision: z
      .number()
      .int()
      .describe("Grows with every change of the session; pass it as `after` to long-poll for the next one."),
    next: z
      .object({ type: z.literal("open_url"), url: z.string() })
      .optional()
      .describe("What the client does next: open this page in a browser."),
    waiting_for: z
      .enum(WAITING_FOR)
      .optional()
      .describe(
        "While pending or waiting_for_user: an API key or OAuth client credentials on the input page, the sign-in at the provider, or the device code.",
      ),
    device: DeviceCodeSchema.optional().describe("Device code flow: what the person enters, and where."),
    redirect_uri: z
      .string()
      .optional()
      .describe("OAuth: the callback URL; register it with the provider when you create an OAuth app."),
    client_setup: z
      .object({
        steps: z.array(
          z.object({
            text: z.string(),
            copy: z.string().optional().describe("A value to paste into the provider's settings."),
          }),
        ),
      })
      .optional()
      .describe(
        "While waiting for client_credentials: how to create the OAuth app, step by step (registration page, callback URL, scopes).",
      ),
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
    .describe("Seconds to wait for the session to change before answering (long poll, at most 30)."),
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      "The last `revision` the client saw: answer at once if the session changed since, else wait. Without it, wait for the next change.",
    ),
});

/**
 * `POST /api/auth/sessions/{id}/input` as JSON (the CLI's masked prompt or piped stdin): an API key,
 * or the OAuth client id and secret a provider without a public client needs.
 */
export const SessionInputSchema = z
  .object({
    api_key: z.string().max(8192).optional(),
    client_id: z.string().max(512).optional(),
    client_secret: z.string().max(2048).optional(),
  })
  .meta({ id: "SessionInput" });
export type SessionInput = z.infer<typeof SessionInputSchema>;
