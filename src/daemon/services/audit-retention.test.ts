import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import { DEFAULT_EXTERNAL_RETENTION_DAYS, externalRetentionDays } from "./audit-retention.ts";

describe("SVC_AUDIT_EXTERNAL_RETENTION_DAYS", () => {
  it("defaults to 30 days and takes a positive number, fractions included", () => {
    expect(externalRetentionDays({})).toBe(DEFAULT_EXTERNAL_RETENTION_DAYS);
    expect(externalRetentionDays({ SVC_AUDIT_EXTERNAL_RETENTION_DAYS: " " })).toBe(
      DEFAULT_EXTERNAL_RETENTION_DAYS,
    );
    expect(externalRetentionDays({ SVC_AUDIT_EXTERNAL_RETENTION_DAYS: "7" })).toBe(7);
    expect(externalRetentionDays({ SVC_AUDIT_EXTERNAL_RETENTION_DAYS: "0.5" })).toBe(0.5);
  });

  it("refuses anything else with a message naming the variable", () => {
    for (const value of ["0", "-3", "forever", "1e400"]) {
      expect(() => externalRetentionDays({ SVC_AUDIT_EXTERNAL_RETENTION_DAYS: value })).toThrow(
        InvalidInputError,
      );
      expect(() => externalRetentionDays({ SVC_AUDIT_EXTERNAL_RETENTION_DAYS: value })).toThrow(
        /SVC_AUDIT_EXTERNAL_RETENTION_DAYS must be a positive number/,
      );
    }
  });
});
