import { z } from "zod";

export const IdentityRegistrationSchema = z.object({
  handle: z.string().min(3).max(64).describe("The identity's handle; must equal the PoP token's `sub`."),
  did: z
    .string()
    .startsWith("did:key:z")
    .max(128)
    .describe("The identity's did:key; must equal the token's `iss`."),
  local_claim_proof: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional()
    .describe(
      "HMAC-SHA256 of `svc-local-claim|<did>` under the daemon's bootstrap secret: claims the identity for the local owner.",
    ),
});
export type IdentityRegistration = z.infer<typeof IdentityRegistrationSchema>;

export const RegisteredIdentitySchema = z.object({
  handle: z.string(),
  did: z.string(),
  principal_id: z.string().optional(),
  principal_role: z.enum(["admin", "user"]).optional(),
  vault_id: z.string().optional(),
  claim_url: z
    .string()
    .optional()
    .describe(
      "Unclaimed identity without a local proof: open this link, sign in, and confirm to attach the identity to your account (single use).",
    ),
  claim_expires_at: z.string().optional().describe("When `claim_url` stops working."),
});
export type RegisteredIdentityRecord = z.infer<typeof RegisteredIdentitySchema>;
