import type { ClientConfig } from "./config.ts";

export const DEFAULT_BASE_URL = "http://127.0.0.1:7998";

/** Which daemon a client talks to: `SVC_BASE_URL`, then the saved `daemon_base_url`, then loopback. */
export function resolveBaseUrl(env: NodeJS.ProcessEnv, config: ClientConfig): string {
  const chosen = env.SVC_BASE_URL || config.daemon_base_url || DEFAULT_BASE_URL;
  return chosen.replace(/\/+$/, "");
}

export function isLoopbackUrl(baseUrl: string): boolean {
  const { hostname } = new URL(baseUrl);
  return hostname === "127.0.0.1" || hostname === "localhost" || hostname === "[::1]" || hostname === "::1";
}
