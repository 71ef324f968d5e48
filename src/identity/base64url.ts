const BASE64URL_ALPHABET = /^[A-Za-z0-9_-]*$/;

/** Encodes bytes as unpadded base64url (RFC 4648 §5), as JWS compact serialization uses. */
export function encodeBase64url(bytes: Uint8Array | string): string {
  return (typeof bytes === "string" ? Buffer.from(bytes, "utf8") : Buffer.from(bytes)).toString("base64url");
}

/**
 * Decodes unpadded base64url strictly: only the URL-safe alphabet, no padding, no whitespace, and only
 * the canonical spelling (unused trailing bits must be zero). Returns undefined for anything else, so a
 * token has exactly one accepted spelling and flipping any character changes the decoded bytes.
 */
export function decodeBase64urlStrict(text: string): Buffer | undefined {
  if (!BASE64URL_ALPHABET.test(text) || text.length % 4 === 1) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}
