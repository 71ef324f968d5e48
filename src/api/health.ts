import { z } from "zod";

const encryptionFields = {
  configured_encryption_mode: z
    .string()
    .optional()
    .describe("Configured master-key mode: auto, local_key, keyring."),
  effective_encryption_source: z
    .string()
    .optional()
    .describe("Master-key source chosen at runtime: env, keyring, local_key."),
  encryption_backend: z
    .string()
    .optional()
    .describe("Human-readable description of the effective master-key source."),
};

export const HealthSchema = z.object({
  status: z.literal("ok"),
  version: z.string().describe("Installed package version."),
  instance_id: z
    .string()
    .optional()
    .describe("Names the SVC_HOME this daemon serves (its server/instance.id); absent on older daemons."),
  ...encryptionFields,
});
export type Health = z.infer<typeof HealthSchema>;

export const READINESS_CHECKS = [
  "store",
  "vault",
  "integrity",
  "identity",
  "providers",
  "connections",
  "spec_version",
] as const;
export type ReadinessCheck = (typeof READINESS_CHECKS)[number];

export const ReadinessSchema = z.object({
  status: z.enum(["ready", "not_ready"]),
  checks: z
    .object({
      store: z.string(),
      vault: z.string(),
      integrity: z.string(),
      identity: z.string(),
      providers: z.string(),
      connections: z.string(),
      spec_version: z.string(),
      redis: z.string().optional(),
    })
    .describe("Per-component status: `ok`, or the failure value."),
  warnings: z.array(z.string()).optional(),
  issues: z.array(z.string()).optional(),
  store_backend: z
    .string()
    .optional()
    .describe(
      "Which relational store the `store` check probed: `SQLite <path>` or `PostgreSQL <host>:<port>/<database>` (never credentials).",
    ),
  runtime_state: z
    .string()
    .optional()
    .describe(
      "Where auth sessions, the replay cache and rate limits live: `memory (this daemon process)` or `Redis <host>:<port>/<db> (prefix <p>)` (never credentials).",
    ),
  ...encryptionFields,
});
export type Readiness = z.infer<typeof ReadinessSchema>;

export const WhoamiSchema = z.object({
  home: z.string().describe("Absolute path of the service home directory."),
  identity: z.string().describe("Registered identity handle."),
  principal_id: z.string().optional(),
  vault_id: z.string().optional(),
  principal_role: z.enum(["admin", "user"]).optional(),
  did: z.string().optional(),
});
export type Whoami = z.infer<typeof WhoamiSchema>;
