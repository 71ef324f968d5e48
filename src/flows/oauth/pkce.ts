import { createHash, randomBytes } from "node:crypto";

/** An RFC 7636 verifier and its S256 challenge. The verifier never leaves the daemon until the code exchange. */
export interface PkcePair {
  verifier: string;
  challenge: string;
}

/** 32 random bytes: a 43-character verifier, the shortest RFC 7636 allows and as strong as the hash. */
export function newPkcePair(): PkcePair {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** An unguessable `state` value; the daemon binds it to one session and accepts it once. */
export function newState(): string {
  return randomBytes(24).toString("base64url");
}
