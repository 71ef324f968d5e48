import { z } from "zod";

/** One provider's row of the proxy routing table. */
export const ProxyRouteSchema = z.object({
  provider: z.string(),
  auth_type: z.enum(["oauth2", "api_key"]),
  api_url: z.array(z.string()).describe("The api_url entries, `{base_url}` resolved where known."),
  oauth_endpoints: z
    .array(z.string())
    .describe("The provider's OAuth endpoint URLs: requests to them never get a credential."),
  header_name: z.string().describe("The header the credential goes into."),
  env: z.array(z.string()).describe("Variables set to `svc-proxy-managed` in the child."),
  connections: z.array(z.string()).describe("The caller's connections to this provider."),
  default_connection: z.string().nullable(),
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
