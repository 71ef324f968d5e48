import type { FastifyInstance } from "fastify";
import { OperationNotAllowedError } from "../../core/errors.ts";
import type { DaemonConfig } from "../context.ts";

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

/** Host header values this daemon answers to on `port`; anything else is a DNS-rebinding attempt. */
export function allowedHosts(config: DaemonConfig, port: number): Set<string> {
  const allowed = new Set<string>();
  for (const name of LOOPBACK_NAMES) allowed.add(`${name}:${port}`);
  const bound = config.host.includes(":") && !config.host.startsWith("[") ? `[${config.host}]` : config.host;
  allowed.add(`${bound}:${port}`);
  if (config.publicUrl) {
    const url = new URL(config.publicUrl);
    allowed.add(url.host);
    if (!url.port) allowed.add(`${url.hostname}:${url.protocol === "https:" ? 443 : 80}`);
  }
  return allowed;
}

/**
 * Refuses requests whose Host header is not one of the daemon's own names, so a web page on an
 * attacker's domain that rebinds to 127.0.0.1 cannot talk to the daemon.
 */
export function registerHostGuard(app: FastifyInstance, config: DaemonConfig): void {
  // Computed on the first request: with port 0 the real port is known only after listen.
  let allowed: Set<string> | undefined;
  app.addHook("onRequest", async (request) => {
    allowed ??= allowedHosts(config, request.socket.localPort ?? config.port);
    const host = request.headers.host?.toLowerCase();
    if (!host || !allowed.has(host)) {
      throw new OperationNotAllowedError(
        `this daemon does not answer to the host "${host ?? ""}"; use ${[...allowed][0]} (or configure the public URL)`,
      );
    }
  });
}
