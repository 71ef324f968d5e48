import type { FastifyReply } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { ErrorBodySchema } from "../../api/errors.ts";
import { IdentityRegistrationSchema, RegisteredIdentitySchema } from "../../api/identities.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import { AuthenticationFailedError, RateLimitedError } from "../../core/errors.ts";
import { verifyLocalClaimProof } from "../../identity/local-claim.ts";
import { CLAIM_TTL_MS, type DaemonContext, MAX_UNCLAIMED_IDENTITIES } from "../context.ts";
import { daemonBaseUrl } from "../plugins/browser-auth.ts";
import { principalFields } from "../services/principals.ts";

/** An identity registers itself (a self-signed PoP token) and, proving local access, is claimed. */
export function identityRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  const { perAddress, claimLinks } = context.selfRegistrationLimits;

  /**
   * A registration without a local proof leaves an unclaimed identity and a claim link in the
   * daemon: counted per client address, the unclaimed identities capped (the oldest past their
   * claim window make room), and the claim links issued capped in all. Refusals are 429.
   */
  async function limitSelfRegistration(
    reply: FastifyReply,
    address: string,
    creates: boolean,
    now: Date,
  ): Promise<void> {
    const refuse = (seconds: number, why: string): never => {
      reply.header("retry-after", String(seconds));
      throw new RateLimitedError(`${why}; try again in ${seconds} s, or register on the daemon's machine`);
    };
    const byAddress = await perAddress.reserve(address, now);
    if (!byAddress.granted) refuse(byAddress.retryAfter, "too many identities registered from this address");
    if (creates) {
      const wait = await context.identities.makeRoomForUnclaimed(now, MAX_UNCLAIMED_IDENTITIES, CLAIM_TTL_MS);
      if (wait > 0) refuse(wait, "too many identities are waiting to be claimed");
    }
    const linkWait = await claimLinks.charge("all", 1, now);
    if (linkWait > 0) refuse(linkWait, "too many claim links are pending");
  }

  return async (app) => {
    app.post(
      "/api/identities",
      {
        config: { auth: "self-signed" },
        schema: {
          summary: "Register an identity; with a local claim proof, attach it to the local owner",
          description:
            "Authenticated by a PoP token signed with the key the `did` names (`iss` = did, `sub` = handle). Idempotent. An identity no principal has claimed gets a one-time `claim_url` (10 minutes): a person signs in there and confirms.",
          tags: ["identities"],
          security: [{ pop: [] }],
          body: IdentityRegistrationSchema,
          response: {
            200: RegisteredIdentitySchema,
            400: ErrorBodySchema,
            401: ErrorBodySchema,
            403: ErrorBodySchema,
            429: ErrorBodySchema,
          },
        },
      },
      async (request, reply) => {
        const { handle, did, local_claim_proof: proof } = request.body;
        const claims = request.popClaims!;
        if (claims.iss !== did || claims.sub !== handle) {
          throw new AuthenticationFailedError(
            "the PoP token must be signed by the identity being registered",
          );
        }
        const now = context.now();
        if (proof !== undefined && !verifyLocalClaimProof(context.bootstrapSecret, did, proof)) {
          throw new AuthenticationFailedError(
            "the local claim proof is wrong (is this the daemon's SVC_HOME?)",
          );
        }
        if (proof === undefined) {
          const known = await context.identities.lookup(handle);
          // Anyone with a fresh key can register and get a claim link: bounded, unlike a local client.
          if (!known?.principalId) await limitSelfRegistration(reply, request.ip, known === undefined, now);
        }
        let identity = await context.identities.register(handle, did, now);
        if (proof !== undefined) {
          if (!identity.principalId) {
            const owner = await context.principals.localOwner(now);
            identity = await context.identities.claim(handle, owner.id, now);
            await context.audit.record({
              event: AUDIT_EVENTS.identityClaimed,
              status: "success",
              identity: handle,
              principal_id: owner.id,
              detail: { method: "local" },
            });
          }
        }
        const principal = identity.principalId
          ? await context.principals.get(identity.principalId)
          : undefined;
        const record = { handle: identity.handle, did: identity.did, ...principalFields(principal) };
        if (principal) return record;
        const claim = await context.claims.issue({ handle: identity.handle, did: identity.did });
        return {
          ...record,
          claim_url: `${daemonBaseUrl(context, request)}/api/claim/${claim.token}`,
          claim_expires_at: claim.expiresAt.toISOString(),
        };
      },
    );
  };
}
