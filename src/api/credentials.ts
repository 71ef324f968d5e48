import { z } from "zod";
import { AuthTypeSchema } from "../providers/schema.ts";

/** One provider's row of the proxy routing table. */
export const ProxyRouteSchema = z.object({
  provider: z.string(),
  auth_type: AuthTypeSchema,
  api_url: z.array(z.string()).describe("The api_url entries, `{base_url}` resolved where known."),
  oauth_endpoints: z
    .array(z.string())
    .describe("The provider's OAuth endpoint URLs: requests to them never get a credential."),
  header_name: z.string().describe("The header the credential goes into."),
  env: z.array(z.string()).describe("Variables set to `svc-proxy-managed` in the child."),
  connections: z.array(z.string()).describe("The caller's connections to this provider."),
  default_connection: z.string().nullable(),
  regions: z
    .record(z.string(), z.string())
    .optional()
    .describe("aws_sigv4 providers: each connection's default region (AWS_REGION in `svc run`)."),
  allowed: z
    .literal(false)
    .optional()
    .describe(
      "Present when the provider is outside the caller's scope: the proxy asks resolve anyway, which refuses with 403 naming the scope.",
    ),
});
export type ProxyRoute = z.infer<typeof ProxyRouteSchema>;

export const ProxyRoutesSchema = z.object({
  routes: z.array(ProxyRouteSchema),
});
export type ProxyRoutes = z.infer<typeof ProxyRoutesSchema>;

export const ResolveRequestSchema = z
  .object({
    host: z
      .string()
      .min(1)
      .max(261)
      .optional()
      .describe("Request host, with `:port` when not 443. Required unless `provider` is given."),
    path: z.string().max(8192).default("/").describe("Request path (and query)."),
    provider: z.string().optional().describe("Use this provider instead of route matching."),
    connection: z.string().optional().describe("Use this connection instead of the provider's default."),
  })
  .meta({ id: "ResolveRequest" });
export type ResolveRequest = z.input<typeof ResolveRequestSchema>;

export const ResolvedCredentialSchema = z
  .object({
    provider: z.string(),
    connection: z.string(),
    header_name: z.string(),
    header_value: z.string().describe("The secret: the complete header value to inject."),
    expires_at: z.string().nullable().describe("Do not reuse the value after this time."),
  })
  .meta({ id: "ResolvedCredential" });
export type ResolvedCredential = z.infer<typeof ResolvedCredentialSchema>;

/**
 * The payload hash: lower-case hex SHA-256, or (S3 only) UNSIGNED-PAYLOAD, or
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER for an aws-chunked body without chunk signatures.
 */
export const PAYLOAD_SHA256_PATTERN =
  /^(?:[0-9a-f]{64}|UNSIGNED-PAYLOAD|STREAMING-UNSIGNED-PAYLOAD-TRAILER)$/;

export const SignRequestSchema = z
  .object({
    host: z
      .string()
      .min(1)
      .max(261)
      .describe("Request host, with `:port` when not 443. Service and region are read from it."),
    method: z
      .string()
      .regex(/^[A-Z]{1,16}$/, "must be an upper-case HTTP method")
      .describe("Request method."),
    path: z
      .string()
      .max(8192)
      .default("/")
      .describe("The path as sent on the wire (percent-encoded), without the query."),
    query: z.string().max(16384).default("").describe("The raw query string, without `?`."),
    headers: z
      .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/), z.string().max(16384))
      .default({})
      .describe(
        "Further headers to sign (content-type, x-amz-target, ...), as they will be sent. `host` is always signed; authorization and the x-amz-date, x-amz-security-token and x-amz-content-sha256 headers are the daemon's to set and are ignored here.",
      ),
    payload_sha256: z
      .string()
      .regex(
        PAYLOAD_SHA256_PATTERN,
        "must be a lower-case hex SHA-256, UNSIGNED-PAYLOAD or STREAMING-UNSIGNED-PAYLOAD-TRAILER",
      )
      .describe(
        "SHA-256 of the body (hex); S3 also takes UNSIGNED-PAYLOAD and STREAMING-UNSIGNED-PAYLOAD-TRAILER.",
      ),
    provider: z.string().optional().describe("Use this provider instead of route matching."),
    connection: z.string().optional().describe("Use this connection instead of the provider's default."),
  })
  .meta({ id: "SignRequest" });
export type SignRequest = z.input<typeof SignRequestSchema>;

export const SignedRequestSchema = z
  .object({
    provider: z.string(),
    connection: z.string(),
    service: z.string().describe("The signing name read from the host (`bedrock` for bedrock-runtime)."),
    region: z.string().describe("The region read from the host (us-east-1 for global endpoints)."),
    headers: z
      .record(z.string(), z.string())
      .describe(
        "The headers to set, replacing any of the same name: authorization, x-amz-date, x-amz-security-token (session credentials) and x-amz-content-sha256 (S3).",
      ),
    expires_at: z.string().describe("AWS refuses the signature after this time (15 minutes)."),
  })
  .meta({ id: "SignedRequest" });
export type SignedRequest = z.infer<typeof SignedRequestSchema>;

/**
 * The credential channel: one long-lived connection per `svc run` proxy over which each request's
 * resolve is one message (docs/daemon-api.md, "Credential channel"). Opened with
 * `GET /api/credentials/channel`, `Connection: Upgrade`, `Upgrade: svc-resolve/1` and a PoP token;
 * then newline-delimited JSON both ways.
 */
export const CHANNEL_PATH = "/api/credentials/channel";
export const CHANNEL_PROTOCOL = "svc-resolve/1";
/** A message longer than this (no newline within it) closes the channel. */
export const CHANNEL_MAX_LINE_BYTES = 64 * 1024;

/** Proxy to daemon: one resolve. */
export const ChannelRequestSchema = z.object({
  id: z.number().int().nonnegative(),
  resolve: ResolveRequestSchema,
});
export type ChannelRequest = z.input<typeof ChannelRequestSchema>;

/** Daemon to proxy: the answer to the request with the same id. */
export type ChannelAnswer =
  | { id: number; credential: ResolvedCredential }
  | { id: number; error: { error: string; message: string } };
