/**
 * Expiry warnings for the proxy CA, kept apart from ca.ts so `svc doctor` can check the CA without
 * loading the certificate-generation library.
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const DAY_MS = 24 * 60 * 60 * 1000;
const WARN_BEFORE_MS = 30 * DAY_MS;

/** A line for `svc doctor` when the CA has fewer than 30 days left. */
export function caExpiryWarning(
  ca: { certPath: string; notAfter: Date },
  now: Date = new Date(),
): string | undefined {
  const remainingMs = ca.notAfter.getTime() - now.getTime();
  if (remainingMs >= WARN_BEFORE_MS) return undefined;
  const expiry = ca.notAfter.toISOString();
  if (remainingMs <= 0) return `The svc proxy CA ${ca.certPath} expired on ${expiry}.`;
  const days = Math.ceil(remainingMs / DAY_MS);
  return (
    `The svc proxy CA ${ca.certPath} expires on ${expiry} (in ${days} day${days === 1 ? "" : "s"}). ` +
    "svc replaces it a day before; anything that trusts a copy of ca.pem must then be given the new one."
  );
}

/** `caExpiryWarning` for the CA in `dir`, read without creating one; undefined when there is none. */
export function installedCaWarning(dir: string, now: Date = new Date()): string | undefined {
  const certPath = join(dir, "ca.pem");
  let notAfter: Date;
  try {
    notAfter = new Date(new X509Certificate(readFileSync(certPath)).validTo);
  } catch {
    return undefined;
  }
  return caExpiryWarning({ certPath, notAfter }, now);
}
