import { type KeyObject, sign } from "node:crypto";
import { bodySha256Hex } from "../../src/identity/pop-token.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** Signs any header and claims with an Ed25519 key: for forging tokens the real signer refuses to make. */
export function signRaw(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject,
): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString("base64url")}`;
}

export function standardClaims(
  identity: { handle: string; did: string },
  request: { method: string; path: string; body?: string },
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: identity.did,
    sub: identity.handle,
    aud: "svc-daemon",
    iat: now,
    exp: now + 30,
    jti: `t-${Math.random().toString(36).slice(2)}${Date.now()}`,
    htm: request.method,
    htu: request.path,
    body_sha256: bodySha256Hex(request.body ?? ""),
    ...overrides,
  };
}
