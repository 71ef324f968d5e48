import { z } from "zod";

const email = z
  .email()
  .max(320)
  .transform((value) => value.toLowerCase());

export const SignInSchema = z.object({ email, password: z.string().min(1).max(1024) }).meta({ id: "SignIn" });

export const RegistrationSchema = z
  .object({ email, password: z.string().min(10, "use at least 10 characters").max(1024) })
  .meta({ id: "Registration" });

/** The one answer to a registration, whether the email was free or taken: it tells nothing. */
export const RegistrationReceiptSchema = z
  .object({
    status: z.literal("accepted"),
    message: z.string(),
  })
  .meta({ id: "RegistrationReceipt" });
export type RegistrationReceipt = z.infer<typeof RegistrationReceiptSchema>;

export const REGISTRATION_RECEIPT: RegistrationReceipt = {
  status: "accepted",
  message:
    "If this email had no account, it has one now. Sign in with it; if it already had one, sign in with that account's password.",
};

export const BrowserSessionSchema = z
  .object({
    principal_id: z.string(),
    role: z.enum(["admin", "user"]),
    email: z.string().nullable().describe("null for the daemon's local owner (signed in by a link)."),
    identity: z.string().describe("How this browser session appears as `identity` in the audit log."),
    csrf_token: z.string().describe("Send as `X-CSRF-Token` on every POST made with the session cookie."),
    expires_at: z.string(),
  })
  .meta({ id: "BrowserSession" });
export type BrowserSessionRecord = z.infer<typeof BrowserSessionSchema>;

export const DashboardLinkRequestSchema = z
  .object({
    next: z
      .string()
      .regex(/^\/(?!\/)[^\s\\]*$/, "a path on the daemon, like /audit")
      .max(256)
      .optional()
      .describe("Where the link leads after signing in (default `/`)."),
  })
  .meta({ id: "DashboardLinkRequest" });

export const DashboardLinkSchema = z
  .object({
    url: z.string().describe("One-time sign-in link to the dashboard."),
    expires_at: z.string(),
  })
  .meta({ id: "DashboardLink" });
