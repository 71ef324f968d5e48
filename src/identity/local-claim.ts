import { nodeCrypto } from "../core/node-crypto.ts";

const { createHmac, timingSafeEqual } = nodeCrypto;

/**
 * Proof that a client can read the daemon's bootstrap secret (mode 0600 under `server/`), which
 * only the daemon's owner can. Bound to the identity's DID, so it is useless for any other key.
 */
export function localClaimProof(bootstrapSecret: Uint8Array, did: string): string {
  return createHmac("sha256", bootstrapSecret).update(`svc-local-claim|${did}`).digest("hex");
}

export function verifyLocalClaimProof(bootstrapSecret: Uint8Array, did: string, proof: string): boolean {
  const expected = Buffer.from(localClaimProof(bootstrapSecret, did), "hex");
  const given = Buffer.from(proof, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
