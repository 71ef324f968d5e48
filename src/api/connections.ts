import { z } from "zod";
import { AuthTypeSchema, FlowSchema } from "../providers/schema.ts";

import { CONNECTION_NAME_PATTERN } from "./names.ts";

export { CONNECTION_NAME_PATTERN, DEFAULT_CONNECTION } from "./names.ts";

export const ConnectionNameSchema = z
  .string()
  .regex(CONNECTION_NAME_PATTERN, "must be 1-63 characters of A-Z, a-z, 0-9, '_', '.' or '-'")
  .describe("Connection name (`default` unless named).");

export const ConnectionParamsSchema = z.object({
  provider: z.string().min(1).max(64),
  connection: ConnectionNameSchema,
});

export const CONNECTION_STATUSES = ["active", "refresh_due", "expired", "refresh_failed"] as const;

/** The credential part of a connection record: redacted unless explicitly revealed. */
export const CredentialViewSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("api_key"),
    redacted: z.string().describe("`••••` plus at most the last 4 characters of keys of 20+ characters."),
    api_key: z.string().optional().describe("Only with `reveal=true`."),
  }),
  z.object({
    type: z.literal("aws_sigv4"),
    access_key_id: z.string().describe("Not a secret: names the key in AWS's own logs and consoles."),
    redacted: z.string().describe("The secret access key, as `••••` plus at most its last 4 characters."),
    has_session_token: z.boolean(),
    region: z
      .string()
      .nullable()
      .describe("The default region (AWS_REGION and AWS_DEFAULT_REGION in `svc run`)."),
    secret_access_key: z.string().optional().describe("Only with `reveal=true`."),
    session_token: z.string().optional().describe("Only with `reveal=true`."),
  }),
  z.object({
    type: z.literal("oauth2"),
    token_type: z.string(),
    scopes: z.array(z.string()),
    has_refresh_token: z.boolean(),
    access_token: z.string().optional().describe("Only with `reveal=true`."),
    refresh_token: z.string().optional().describe("Only with `reveal=true`."),
  }),
]);

export const ConnectionSchema = z
  .object({
    provider: z.string(),
    connection: z.string(),
    auth_type: AuthTypeSchema,
    flow: FlowSchema,
    is_default: z.boolean(),
    status: z
      .enum(CONNECTION_STATUSES)
      .describe(
        "active; refresh_due (expired access token, refreshed on next use); expired (log in again); refresh_failed (the last refresh was refused: log in again).",
      ),
    refresh_error: z
      .string()
      .optional()
      .describe("With refresh_failed: the provider's answer to the last refresh and when it came."),
    created_at: z.string(),
    updated_at: z.string(),
    expires_at: z.string().nullable().describe("When the credential expires; null for API keys."),
    base_url: z.string().optional().describe("Tenant base URL of a multi-tenant provider."),
    credential: CredentialViewSchema,
  })
  .meta({ id: "Connection" });
export type Connection = z.infer<typeof ConnectionSchema>;

export const ConnectionListSchema = z.array(ConnectionSchema);

export const ConnectionListQuerySchema = z.object({
  provider: z.string().optional().describe("Only this provider's connections."),
});

export const ConnectionGetQuerySchema = z.object({
  reveal: z
    .enum(["true", "false"])
    .optional()
    .describe("`true` includes the secret values (audited as `credential.revealed`)."),
});

export const LoggedOutSchema = z.object({
  provider: z.string(),
  connection: z.string(),
  removed: z.literal(true),
  default_connection: z
    .string()
    .nullable()
    .describe("The provider's default afterwards (the oldest remaining when the default was removed)."),
});
export type LoggedOut = z.infer<typeof LoggedOutSchema>;

export const RevokedSchema = z.object({
  provider: z.string(),
  removed_connections: z.array(z.string()),
  removed_client_credentials: z.boolean(),
  remote: z
    .array(
      z.object({
        connection: z.string(),
        result: z.enum(["revoked", "not_supported", "failed"]),
        message: z.string().optional(),
      }),
    )
    .describe("Remote revocation per connection (API keys cannot be revoked remotely: not_supported)."),
});
export type Revoked = z.infer<typeof RevokedSchema>;

export const KeyComparisonSchema = z
  .object({
    api_key: z
      .string()
      .min(1)
      .max(16_384)
      .describe(
        "The key as pasted; for an AWS connection the key pair as JSON or KEY=value lines, compared by its key id and secret.",
      ),
  })
  .meta({ id: "KeyComparison" });

export const KeyComparedSchema = z
  .object({ same: z.boolean().describe("Whether the stored API key equals the one sent.") })
  .meta({ id: "KeyCompared" });
