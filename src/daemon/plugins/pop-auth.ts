import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AuthenticationFailedError, SharedStateUnavailableError } from "../../core/errors.ts";
import {
  type PopClaims,
  type ReplayCache,
  verifyPopToken,
  verifySelfSignedPopToken,
} from "../../identity/pop-token.ts";
import type { DaemonContext } from "../context.ts";
import { authenticateBrowser } from "./browser-auth.ts";

/**
 * How a route authenticates. `/api/*` routes default to `pop`; a route opts out explicitly.
 * `self-signed`: the key comes from the token's own `iss` DID (an identity registering itself).
 * `pop-if-present`: a browser page that an API client may also call; a PoP header, when sent,
 * must verify, and the handler decides what an anonymous (browser) request must prove instead.
 * `browser`: a dashboard session cookie only (see browser-auth.ts).
 */
export type RouteAuth = "pop" | "self-signed" | "pop-if-present" | "browser" | "none";

export interface Caller {
  handle: string;
  did: string;
  principalId: string | null;
}

declare module "fastify" {
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /** A `pop` route the dashboard calls too: without an Authorization header, its session cookie counts. */
    browser?: boolean;
    /**
     * The readiness probe: when the shared replay cache (Redis) is unreachable, a correctly signed
     * token is still accepted, so the route can report the outage instead of failing with it. It
     * reveals nothing a replayed token could abuse.
     */
    replayOptional?: boolean;
  }
  interface FastifyRequest {
    caller?: Caller;
    popClaims?: PopClaims;
  }
}

const SCHEME = /^PoP\s+(\S+)$/;

export function bearerToken(request: { headers: { authorization?: string | undefined } }): string {
  const header = request.headers.authorization;
  const match = header ? SCHEME.exec(header) : null;
  if (!match) throw new AuthenticationFailedError("this route needs an `Authorization: PoP <jwt>` header");
  return match[1]!;
}

/**
 * Decided by the route the router matched (its pattern), never by the raw URL: the router decodes
 * the path (`/%61pi/...` runs `/api/...`), so a prefix test on the raw target could be dodged.
 */
export function routeAuth(request: FastifyRequest): RouteAuth {
  const configured = request.routeOptions.config?.auth;
  if (configured) return configured;
  return request.routeOptions.url?.startsWith("/api/") ? "pop" : "none";
}

/**
 * Verifies the Proof-of-Possession token on every route that needs one: after the body is read (it
 * is signed) and before it is validated, so an unauthenticated caller learns nothing of a route.
 */
export function registerPopAuth(app: FastifyInstance, context: DaemonContext): void {
  app.addHook("preValidation", async (request, reply) => {
    const auth = routeAuth(request);
    if (auth === "none") return;
    const anonymous = request.headers.authorization === undefined;
    if (auth === "pop-if-present" && anonymous) return;
    if (auth === "browser" || (anonymous && request.routeOptions.config?.browser)) {
      await authenticateBrowser(context, request);
      return;
    }
    const token = bearerToken(request);
    const signed = {
      method: request.method,
      pathAndQuery: request.url,
      body: request.rawBody ?? Buffer.alloc(0),
    };
    const nowSeconds = Math.floor(context.now().getTime() / 1000);
    const replayCache = request.routeOptions.config?.replayOptional
      ? unlessUnavailable(context.replayCache)
      : context.replayCache;
    if (auth === "self-signed") {
      request.popClaims = await verifySelfSignedPopToken(token, signed, { nowSeconds, replayCache });
      refuseIfBeforeStart(context, request.popClaims, reply);
      return;
    }
    const { claims, caller } = await verifyCaller(context, token, signed, replayCache);
    refuseIfBeforeStart(context, claims, reply);
    request.popClaims = claims;
    request.caller = caller;
  });
}

/** Verifies a PoP token of a registered identity (signature, claims, single use): who it proves. */
export async function verifyCaller(
  context: DaemonContext,
  token: string,
  signed: { method: string; pathAndQuery: string; body: Buffer },
  replayCache: ReplayCache = context.replayCache,
): Promise<{ claims: PopClaims; caller: Caller }> {
  let principalId: string | null = null;
  const claims = await verifyPopToken(token, signed, {
    nowSeconds: Math.floor(context.now().getTime() / 1000),
    replayCache,
    lookupIdentity: async (handle) => {
      const identity = await context.identities.lookup(handle);
      principalId = identity?.principalId ?? null;
      return identity;
    },
  });
  return { claims, caller: { handle: claims.sub, did: claims.iss, principalId } };
}

/** Whether a token predates this daemon's start (see refuseIfBeforeStart). */
export function issuedBeforeStart(context: DaemonContext, claims: PopClaims): boolean {
  return claims.iat < context.popIssuedNotBefore;
}

/**
 * A token issued before this daemon started may have been used with the previous run, whose replay
 * cache is gone. `Retry-After` tells the client that a token signed a second later will do.
 */
function refuseIfBeforeStart(context: DaemonContext, claims: PopClaims, reply: FastifyReply): void {
  if (!issuedBeforeStart(context, claims)) return;
  reply.header("retry-after", "1");
  throw new AuthenticationFailedError("PoP token was signed before the daemon (re)started; sign a new one");
}

/** A replay cache that lets tokens through while the shared state cannot be reached. */
function unlessUnavailable(cache: ReplayCache): ReplayCache {
  return {
    async remember(jti, expiresAtSeconds) {
      try {
        return await cache.remember(jti, expiresAtSeconds);
      } catch (error) {
        if (error instanceof SharedStateUnavailableError) return true;
        throw error;
      }
    },
  };
}

/** The authenticated caller of a PoP route (the hook guarantees it is set). */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AuthenticationFailedError("this route needs a PoP-authenticated caller");
  return request.caller;
}
