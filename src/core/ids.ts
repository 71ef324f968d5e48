import { nodeCrypto } from "./node-crypto.ts";

const { randomBytes } = nodeCrypto;

/** An opaque random identifier with a readable type prefix, e.g. `prn_3kT9...`. */
export function newId(prefix: string, bytes = 12): string {
  return `${prefix}_${randomBytes(bytes).toString("base64url")}`;
}
