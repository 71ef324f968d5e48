/**
 * The Proof-of-Possession token every protected daemon route requires as `Authorization: PoP <jwt>`.
 * One entry point for callers; each job lives in its own file.
 */
export * from "./pop-claims.ts";
export * from "./pop-sign.ts";
export * from "./pop-verify.ts";
export * from "./replay-cache.ts";
