import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

/**
 * Password hashes with scrypt, a memory-hard KDF in Node's own crypto (no native addon).
 * N = 2^15, r = 8 costs 32 MiB and about 100 ms per hash: cheap for one sign-in, dear for a
 * guessing attack. The parameters travel in the stored string, so they can grow later.
 */
const COST = { ln: 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const FORMAT = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

function derive(password: string, salt: Buffer, ln: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** ln;
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, KEY_BYTES, options, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST.ln, COST.r, COST.p);
  return `$scrypt$ln=${COST.ln},r=${COST.r},p=${COST.p}$${salt.toString("base64url")}$${key.toString("base64url")}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = FORMAT.exec(stored);
  if (!match) return false;
  const [, ln, r, p, salt, expected] = match;
  const key = await derive(password, Buffer.from(salt!, "base64url"), Number(ln), Number(r), Number(p));
  const want = Buffer.from(expected!, "base64url");
  return key.length === want.length && timingSafeEqual(key, want);
}

/** A hash no password matches, verified for unknown accounts so they answer as slowly as known ones. */
export const DECOY_HASH = `$scrypt$ln=${COST.ln},r=${COST.r},p=${COST.p}$${Buffer.alloc(16).toString("base64url")}$${Buffer.alloc(KEY_BYTES).toString("base64url")}`;
