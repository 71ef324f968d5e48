import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { secretForms } from "./secret-forms.ts";

const SECRET = `sk-${randomBytes(24).toString("base64url")}`;

/** Whether some form of the secret occurs in `text`. */
const found = (text: string) => secretForms(SECRET).some((form) => text.includes(form));

describe("secretForms", () => {
  it("includes the secret itself", () => {
    expect(secretForms(SECRET)[0]).toBe(SECRET);
  });

  it("finds the secret base64- and base64url-encoded at any offset inside a longer value", () => {
    for (let prefix = 0; prefix < 6; prefix++) {
      for (const suffix of ["", "x", "yz", ":tail"]) {
        const value = Buffer.from(`${"u".repeat(prefix)}${SECRET}${suffix}`);
        expect(found(value.toString("base64")), `prefix ${prefix} suffix ${suffix}`).toBe(true);
        expect(found(value.toString("base64url")), `prefix ${prefix} suffix ${suffix}`).toBe(true);
      }
    }
    // The Basic credential an upstream might echo.
    expect(found(Buffer.from(`user:${SECRET}`).toString("base64"))).toBe(true);
  });

  it("finds the secret percent-encoded, with upper- or lower-case hex", () => {
    const secret = "k3y/with+special=chars&more";
    const forms = secretForms(secret);
    expect(forms).toContain(encodeURIComponent(secret));
    expect(forms).toContain(encodeURIComponent(secret).toLowerCase().replace(/k3y/, "k3y"));
  });

  it("never reduces a form to something short enough to match ordinary text", () => {
    for (const form of secretForms("12345678")) expect(form.length).toBeGreaterThanOrEqual(8);
    expect(found(Buffer.from("an ordinary response without the key").toString("base64"))).toBe(false);
  });
});
