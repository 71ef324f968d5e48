import { nodeCrypto } from "./node-crypto.ts";

const { timingSafeEqual } = nodeCrypto;

/** Compares two secrets in time that does not depend on where they differ. */
export function equalSecrets(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
