import { describe, expect, it } from "vitest";
import { decodeBase64urlStrict, encodeBase64url } from "./base64url.ts";

describe("base64url", () => {
  it("round-trips bytes without padding", () => {
    const bytes = Uint8Array.of(0xfb, 0xff, 0x00, 0x01);
    const text = encodeBase64url(bytes);
    expect(text).toBe("-_8AAQ");
    expect(new Uint8Array(decodeBase64urlStrict(text)!)).toEqual(bytes);
  });

  it("refuses padding, the standard alphabet, whitespace and impossible lengths", () => {
    for (const text of ["-_8AAQ==", "+/8AAQ", "-_8A AQ", "abcde"]) {
      expect(decodeBase64urlStrict(text)).toBeUndefined();
    }
  });

  it("refuses a non-canonical spelling whose unused trailing bits are set", () => {
    expect(decodeBase64urlStrict("AA")).toBeDefined();
    expect(decodeBase64urlStrict("AB")).toBeUndefined();
  });
});
