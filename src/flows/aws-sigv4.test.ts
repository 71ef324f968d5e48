import { describe, expect, it } from "vitest";
import { loadSuite } from "../../test/support/aws-test-suite.ts";
import { canonicalUri, signSigV4 } from "./aws-sigv4.ts";

const suite = loadSuite();

describe("SigV4 against AWS's published test suite", () => {
  it("has the suite's cases", () => {
    expect(suite.length).toBeGreaterThanOrEqual(38);
  });

  for (const testCase of suite) {
    it(testCase.name, () => {
      const { context, request } = testCase;
      const signed = signSigV4(
        {
          method: request.method,
          path: request.path,
          query: request.query,
          headers: request.headers,
          payloadHash: request.payloadHash,
        },
        {
          accessKeyId: context.credentials.access_key_id,
          secretAccessKey: context.credentials.secret_access_key,
          sessionToken: context.omit_session_token ? undefined : context.credentials.token,
        },
        {
          service: context.service,
          region: context.region,
          date: new Date(context.timestamp),
          normalizePath: context.normalize,
          signPayloadHeader: context.sign_body,
        },
      );
      expect(signed.canonicalRequest).toBe(testCase.canonicalRequest);
      expect(signed.stringToSign).toBe(testCase.stringToSign);
      expect(signed.signature).toBe(testCase.signature);
      expect(signed.headers.authorization).toContain(`Signature=${testCase.signature}`);
    });
  }
});

describe("canonical URI", () => {
  it("encodes a non-S3 wire path once more (the SDKs' double encoding)", () => {
    expect(canonicalUri("/model/anthropic.claude-v2%3A1/invoke", true)).toBe(
      "/model/anthropic.claude-v2%253A1/invoke",
    );
  });

  it("keeps an S3 key as encoded once, dots and slashes included", () => {
    expect(canonicalUri("/bucket/a%20b/../%E2%9C%93//x", false)).toBe("/bucket/a%20b/../%E2%9C%93//x");
  });
});
