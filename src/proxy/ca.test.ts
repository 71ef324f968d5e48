import { spawn } from "node:child_process";
import { X509Certificate } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadOrCreateCa } from "./ca.ts";
import { caExpiryWarning, installedCaWarning } from "./ca-expiry.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

let root: string;
let dir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "svc-ca-"));
  dir = join(root, "proxy");
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function modeOf(path: string): number {
  return statSync(path).mode & 0o777;
}

function fingerprintOf(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

/** Runs loadOrCreateCa in a separate Node process that waits until `startAt`, so several race. */
function caFromChildProcess(startAt: number): Promise<string> {
  const script = `
    const { X509Certificate } = await import("node:crypto");
    const { loadOrCreateCa } = await import(process.env.CA_MODULE);
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.START_AT) - Date.now()));
    const ca = await loadOrCreateCa(process.env.CA_DIR);
    process.stdout.write(new X509Certificate(ca.certPem).fingerprint256);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    env: {
      ...process.env,
      CA_MODULE: pathToFileURL(fileURLToPath(new URL("./ca.ts", import.meta.url))).href,
      CA_DIR: dir,
      START_AT: String(startAt),
    },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`child exited ${code}: ${stderr}`)),
    );
  });
}

describe("loadOrCreateCa", () => {
  it("creates a P-256, self-signed, path-length-0 CA valid for two years", async () => {
    const now = new Date("2026-03-01T12:00:00.000Z");
    const ca = await loadOrCreateCa(dir, { now });

    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toMatch(/^CN=svc local proxy CA [0-9a-f]{8}\nO=svc$/);
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(new Date(cert.validFrom).getTime()).toBe(now.getTime() - 60 * 60 * 1000);
    expect(new Date(cert.validTo).getTime()).toBe(now.getTime() + 730 * DAY_MS);
    expect(ca.notAfter).toEqual(new Date(cert.validTo));

    const basic = ca.cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([basic.ca, basic.pathLength, basic.critical]).toEqual([true, 0, true]);
    const usage = ca.cert.getExtension(x509.KeyUsagesExtension)!;
    expect(usage.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    expect(usage.critical).toBe(true);
    expect(ca.cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toMatch(/^[0-9a-f]{40}$/);
  });

  it("writes a PKCS#8 key 0600 and a 0644 certificate in a 0700 folder", async () => {
    const ca = await loadOrCreateCa(dir);

    expect(ca.certPath).toBe(join(dir, "ca.pem"));
    expect(ca.keyPath).toBe(join(dir, "ca-key.pem"));
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(ca.keyPath)).toBe(0o600);
    expect(modeOf(ca.certPath)).toBe(0o644);
    expect(readFileSync(ca.keyPath, "utf8")).toBe(ca.keyPem);
    expect(ca.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(readdirSync(dir).sort()).toEqual(["ca-key.pem", "ca.pem"]);
  });

  it("gives each machine its own CA subject", async () => {
    const first = await loadOrCreateCa(join(root, "a"));
    const second = await loadOrCreateCa(join(root, "b"));
    expect(first.cert.subject).not.toBe(second.cert.subject);
  });

  it("reuses the CA on disk", async () => {
    const first = await loadOrCreateCa(dir);
    const second = await loadOrCreateCa(dir);
    expect(fingerprintOf(second.certPem)).toBe(fingerprintOf(first.certPem));
    expect(second.keyPem).toBe(first.keyPem);
  });

  it("creates one CA when five callers race on first use", async () => {
    const cas = await Promise.all(Array.from({ length: 5 }, () => loadOrCreateCa(dir)));
    const onDisk = fingerprintOf(readFileSync(join(dir, "ca.pem"), "utf8"));
    expect(new Set(cas.map((ca) => fingerprintOf(ca.certPem)))).toEqual(new Set([onDisk]));
    expect(readdirSync(dir).sort()).toEqual(["ca-key.pem", "ca.pem"]);
  });

  it("creates one CA when two processes race on first use", async () => {
    const startAt = Date.now() + 1500;
    const fingerprints = await Promise.all([caFromChildProcess(startAt), caFromChildProcess(startAt)]);
    const onDisk = fingerprintOf(readFileSync(join(dir, "ca.pem"), "utf8"));
    expect(fingerprints).toEqual([onDisk, onDisk]);
    expect(readdirSync(dir).sort()).toEqual(["ca-key.pem", "ca.pem"]);
  });

  it("replaces an expired CA and keeps the old pair as .old", async () => {
    const old = await loadOrCreateCa(dir, { now: new Date("2020-01-01T00:00:00.000Z") });
    const renewed = await loadOrCreateCa(dir, { now: new Date("2022-06-01T00:00:00.000Z") });

    expect(fingerprintOf(renewed.certPem)).not.toBe(fingerprintOf(old.certPem));
    expect(renewed.notAfter.getTime()).toBeGreaterThan(new Date("2024-01-01").getTime());
    expect(readFileSync(join(dir, "ca.pem.old"), "utf8")).toBe(old.certPem);
    expect(readFileSync(join(dir, "ca-key.pem.old"), "utf8")).toBe(old.keyPem);
    expect(modeOf(join(dir, "ca-key.pem.old"))).toBe(0o600);
  });

  it("replaces a CA expiring within a day, and keeps one with more left", async () => {
    const ca = await loadOrCreateCa(dir);
    const twoDaysBefore = new Date(ca.notAfter.getTime() - 2 * DAY_MS);
    expect(fingerprintOf((await loadOrCreateCa(dir, { now: twoDaysBefore })).certPem)).toBe(
      fingerprintOf(ca.certPem),
    );
    const halfADayBefore = new Date(ca.notAfter.getTime() - DAY_MS / 2);
    expect(fingerprintOf((await loadOrCreateCa(dir, { now: halfADayBefore })).certPem)).not.toBe(
      fingerprintOf(ca.certPem),
    );
  });

  it("names the damaged file and the fix when ca.pem is corrupt", async () => {
    await loadOrCreateCa(dir);
    writeFileSync(join(dir, "ca.pem"), "not a certificate");
    await expect(loadOrCreateCa(dir)).rejects.toThrow(
      `The svc proxy CA file ${join(dir, "ca.pem")} is not a PEM certificate. Delete the folder ${dir}`,
    );
  });

  it("refuses a key that is missing or belongs to another certificate", async () => {
    await loadOrCreateCa(dir);
    const other = await loadOrCreateCa(join(root, "other"));
    writeFileSync(join(dir, "ca-key.pem"), other.keyPem);
    await expect(loadOrCreateCa(dir)).rejects.toThrow(/ca-key\.pem does not belong to the certificate/);
    unlinkSync(join(dir, "ca-key.pem"));
    await expect(loadOrCreateCa(dir)).rejects.toThrow(/ca-key\.pem is missing/);
  });

  it("takes over the lock of a process that died", async () => {
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => dead.on("close", resolve));
    await loadOrCreateCa(dir);
    rmSync(join(dir, "ca.pem"));
    rmSync(join(dir, "ca-key.pem"));
    writeFileSync(join(dir, "ca.lock"), String(dead.pid));

    await loadOrCreateCa(dir);
    expect(existsSync(join(dir, "ca.lock"))).toBe(false);
  });
});

describe("caExpiryWarning", () => {
  it("warns in the last 30 days and after expiry", async () => {
    const ca = await loadOrCreateCa(dir);
    const at = (daysLeft: number) => new Date(ca.notAfter.getTime() - daysLeft * DAY_MS);

    expect(caExpiryWarning(ca, at(31))).toBeUndefined();
    expect(caExpiryWarning(ca, at(10))).toContain("(in 10 days)");
    expect(caExpiryWarning(ca, at(-1))).toContain("expired on");
  });

  it("reads the installed CA without creating one (svc doctor)", async () => {
    const empty = join(dir, "none");
    expect(installedCaWarning(empty)).toBeUndefined();
    expect(existsSync(join(empty, "ca.pem"))).toBe(false);
    const ca = await loadOrCreateCa(dir);
    expect(installedCaWarning(dir)).toBeUndefined();
    expect(installedCaWarning(dir, new Date(ca.notAfter.getTime() - 5 * DAY_MS))).toContain("(in 5 days)");
  });
});
