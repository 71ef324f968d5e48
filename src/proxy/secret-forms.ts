/**
 * The forms in which an upstream may echo a secret back besides its literal bytes: base64 and
 * base64url (alone or inside a longer encoded value, such as a Basic credential `user:<key>`) and
 * percent-encoding. The scrubber searches for each of them.
 */

/**
 * The characters of `base64(prefix + secret)` that depend on the secret's bytes alone, for each of
 * the three offsets the secret can have in an encoded stream (its position modulo 3). Whatever
 * surrounds the secret, one of these appears wherever the secret was encoded.
 */
function base64Cores(secret: Buffer, encoding: "base64" | "base64url"): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), secret])
      .toString(encoding)
      .replace(/=+$/, "");
    // Character k carries bits [6k, 6k + 6); the secret's bits are [8 * offset, 8 * (offset + length)).
    const start = Math.ceil((4 * offset) / 3);
    const end = Math.floor((4 * (offset + secret.length)) / 3);
    cores.push(encoded.slice(start, end));
  }
  return cores;
}

/** Percent-encoding as encodeURIComponent writes it, and with lower-case hex digits. */
function percentForms(secret: string): string[] {
  const upper = encodeURIComponent(secret);
  if (upper === secret) return [];
  return [upper, upper.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase())];
}

/** `secret` and every encoded form of it worth searching for, without duplicates. */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [
    ...new Set([
      secret,
      ...base64Cores(bytes, "base64"),
      ...base64Cores(bytes, "base64url"),
      ...percentForms(secret),
    ]),
  ];
}
