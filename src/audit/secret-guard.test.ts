import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type AuditDetail, type AuditEventInput, newEventId } from "./events.ts";
import { guardEvent, looksLikeSecret, MAX_DETAIL_KEYS, REFUSED_VALUE } from "./secret-guard.ts";

/** Random base64url with a capital and a digit guaranteed, like real key material. */
function material(length: number): string {
  return `Z9${randomBytes(length).toString("base64url")}`.slice(0, length);
}

const b64url = (value: string) => Buffer.from(value).toString("base64url");

/** One canary per secret shape the guard knows. */
const CANARIES: Record<string, string> = {
  jwt: `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url('{"sub":"agent"}')}.${material(43)}`,
  bearer: `Bearer ${material(24)}`,
  basic: `Basic ${b64url("alice:hunter2")}`,
  openai: `sk-proj-${material(48)}`,
  anthropic: `sk-ant-api03-${material(80)}`,
  githubPersonal: `ghp_${material(36)}`,
  githubOAuth: `gho_${material(36)}`,
  githubUser: `ghu_${material(36)}`,
  githubServer: `ghs_${material(36)}`,
  githubFineGrained: `github_pat_11${material(80)}`,
  slackBot: `xoxb-123456789012-1234567890123-${material(24)}`,
  slackUser: `xoxp-123456789012-${material(24)}`,
  awsAccessKey: "AKIAIOSFODNN7EXAMPLE",
  google: `AIza${material(35)}`,
  gitlab: `glpat-${material(20)}`,
  huggingFace: `hf_${material(34)}`,
  replicate: `r8_${material(37)}`,
  stripePublishable: `pk_live_${material(24)}`,
  stripeSecret: `sk_live_${material(24)}`,
  stripeRestricted: `rk_live_${material(24)}`,
  sendgrid: `SG.${material(22)}.${material(43)}`,
  resend: `re_${material(30)}`,
  hex: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
  base64: `${material(40)}+/==`,
};

const ORDINARY = [
  "github",
  "default",
  "provider.login",
  "provider.default_changed",
  "success",
  "failure",
  "brave-otter-1234",
  "prn_Ab3dEf6hIj9kLm0n",
  `vlt_${randomBytes(12).toString("base64url")}`,
  `ses_${randomBytes(24).toString("base64url")}`,
  newEventId(new Date()),
  "api.github.com",
  "generativelanguage.googleapis.com",
  "/v1/chat/completions",
  "2030-01-02T03:04:05.000Z",
  "re_authentication_required",
  "task-runner",
  "Bearer token required",
  "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
];

const base: AuditEventInput = { event: "provider.login", status: "success" };

describe("looksLikeSecret", () => {
  it.each(Object.entries(CANARIES))("refuses a %s canary, alone or inside text", (_kind, canary) => {
    expect(looksLikeSecret(canary)).toBe(true);
    expect(looksLikeSecret(`upstream said: ${canary} (rejected)`)).toBe(true);
  });

  it.each(ORDINARY)("lets %s through", (value) => {
    expect(looksLikeSecret(value)).toBe(false);
  });

  it("still refuses the shortest text a shape matches (values shorter than it skip the patterns)", () => {
    expect(looksLikeSecret("eyJabcdefgh..")).toBe(true);
    expect(looksLikeSecret("eyJabcdefg..")).toBe(false);
  });

  it("wants letters and digits in a long run", () => {
    expect(looksLikeSecret("a".repeat(64))).toBe(false);
    expect(looksLikeSecret("1".repeat(64))).toBe(false);
    expect(looksLikeSecret(`${"a1".repeat(15)}`)).toBe(false);
    expect(looksLikeSecret(`${"a1".repeat(16)}`)).toBe(true);
  });
});

describe("guardEvent", () => {
  it("leaves an ordinary event untouched", () => {
    const input: AuditEventInput = {
      event: "provider.login",
      status: "success",
      source: "internal",
      provider: "github",
      connection: "default",
      identity: "brave-otter-1234",
      principal_id: "prn_Ab3dEf6hIj9kLm0n",
      detail: { host: "api.github.com", attempts: 2, interactive: true, reason: null },
      timestamp: new Date("2030-01-02T03:04:05.000Z"),
    };
    const { sanitised, refused } = guardEvent(input);
    expect(sanitised).toEqual(input);
    expect(refused).toEqual([]);
  });

  it("refuses every top-level field that carries a secret shape", () => {
    const input: AuditEventInput = {
      event: "provider.login",
      status: "success",
      provider: CANARIES.openai,
      connection: `conn ${CANARIES.githubPersonal}`,
      identity: CANARIES.jwt,
      principal_id: CANARIES.awsAccessKey,
    };
    const { sanitised, refused } = guardEvent(input);
    expect(sanitised).toEqual({
      ...input,
      provider: REFUSED_VALUE,
      connection: REFUSED_VALUE,
      identity: REFUSED_VALUE,
      principal_id: REFUSED_VALUE,
    });
    expect(refused).toEqual(["provider", "connection", "identity", "principal_id"]);
  });

  it("refuses canaries of each kind in detail values", () => {
    const detail = Object.fromEntries(Object.entries(CANARIES).slice(0, MAX_DETAIL_KEYS));
    const { sanitised, refused } = guardEvent({ ...base, detail });
    expect(Object.values(sanitised.detail!)).toEqual(Object.keys(detail).map(() => REFUSED_VALUE));
    expect(refused).toEqual(Object.keys(detail).map((key) => `detail.${key}`));
  });

  it("catches known secrets inside longer strings, detail keys and detail values", () => {
    const secret = "correct-horse-battery";
    const { sanitised, refused } = guardEvent(
      {
        event: "provider.refresh_failed",
        status: "failure",
        connection: `work-${secret}-2`,
        detail: { [`seen_${secret}`]: "yes", message: `refresh with ${secret} failed`, code: 401 },
      },
      [secret],
    );
    expect(sanitised.connection).toBe(REFUSED_VALUE);
    expect(sanitised.detail).toEqual({
      refused_key_1: REFUSED_VALUE,
      message: REFUSED_VALUE,
      code: 401,
    });
    expect(refused).toEqual(["connection", "detail.refused_key_1", "detail.message"]);
    expect(JSON.stringify(sanitised)).not.toContain(secret);
  });

  it("catches a known secret given as a number", () => {
    const { sanitised } = guardEvent({ ...base, detail: { account: 12345678901 } }, ["12345678901"]);
    expect(sanitised.detail).toEqual({ account: REFUSED_VALUE });
  });

  it("ignores empty and short known secrets", () => {
    const input: AuditEventInput = { ...base, provider: "github", detail: { note: "abc def" } };
    expect(guardEvent(input, ["", "abc", "github"])).toEqual({ sanitised: input, refused: [] });
  });

  it.each([
    "token",
    "secret",
    "password",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "client_secret",
    "refresh_token",
    "access_token",
    "private_key",
    "x_api_key",
    "X-Api-Key",
    "Authorization",
    "Set-Cookie",
  ])("refuses the detail key %s whatever its value", (key) => {
    for (const value of ["none", 3, false, null]) {
      const { sanitised, refused } = guardEvent({ ...base, detail: { [key]: value, kept: "ok" } });
      expect(sanitised.detail).toEqual({ [key]: REFUSED_VALUE, kept: "ok" });
      expect(refused).toEqual([`detail.${key}`]);
    }
  });

  it("caps detail at 20 keys and 512 characters per value", () => {
    const detail: AuditDetail = Object.fromEntries(
      Array.from({ length: 25 }, (_, index) => [`k${index}`, index]),
    );
    detail.k0 = "a".repeat(600);
    const { sanitised, refused } = guardEvent({ ...base, detail });
    expect(Object.keys(sanitised.detail!)).toEqual(Array.from({ length: 20 }, (_, index) => `k${index}`));
    expect(sanitised.detail!.k0).toBe(`${"a".repeat(511)}…`);
    expect(refused).toEqual([]);
  });

  it("keeps a __proto__ detail key as data", () => {
    const detail = JSON.parse('{"__proto__": "x"}');
    const { sanitised } = guardEvent({ ...base, detail });
    expect(Object.getPrototypeOf(sanitised.detail)).toBe(Object.prototype);
    expect(Object.entries(sanitised.detail!)).toEqual([["__proto__", "x"]]);
  });

  it("does not change its input", () => {
    const input: AuditEventInput = { ...base, identity: CANARIES.bearer, detail: { password: "x" } };
    const copy = structuredClone(input);
    guardEvent(input);
    expect(input).toEqual(copy);
  });
});
