/**
 * The svc proxy's local certificate authority: one ECDSA P-256 key pair and self-signed certificate
 * per machine, created on first use in the proxy folder and reused until it nears expiry. The proxy
 * signs its per-host leaves with it, and child processes trust it through the CA bundle.
 */
import "reflect-metadata";
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  type KeyObject,
  randomBytes,
  webcrypto,
} from "node:crypto";
import { chmodSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import * as x509 from "@peculiar/x509";
import { UnexpectedError } from "../core/errors.ts";
import { ensurePrivateDir, writePrivateFile } from "../core/secure-fs.ts";

x509.cryptoProvider.set(webcrypto as Crypto);
const generateKeyPairAsync = promisify(generateKeyPair);

const EC_P256 = { name: "ECDSA", namedCurve: "P-256" } as const;
export const ECDSA_SHA256 = { name: "ECDSA", hash: "SHA-256" } as const;

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const CA_LIFETIME_MS = 730 * DAY_MS;
/** Back-dates notBefore so a client whose clock runs a little slow still accepts the certificate. */
export const CLOCK_SKEW_MS = HOUR_MS;
/** A CA this close to expiry is replaced rather than used: its leaves would barely outlive it. */
const RENEW_BEFORE_MS = DAY_MS;
/** Creating a CA takes milliseconds; waiting this long means the lock holder is stuck. */
const LOCK_TIMEOUT_MS = 10_000;
const LOCK_POLL_MS = 20;

export interface ProxyCa {
  certPem: string;
  /** PKCS#8 PEM. */
  keyPem: string;
  certPath: string;
  keyPath: string;
  notBefore: Date;
  notAfter: Date;
  key: CryptoKeyPair;
  cert: x509.X509Certificate;
}

interface CaPaths {
  dir: string;
  certPath: string;
  keyPath: string;
  lockPath: string;
}

/**
 * Returns the CA in `dir` (ca.pem, ca-key.pem), creating it on first use and replacing it when it
 * expires within a day (the old pair is kept as *.old). Safe against concurrent first use by several
 * processes: creation and replacement happen under a lock file, and every caller returns what ends up
 * on disk.
 */
export async function loadOrCreateCa(dir: string, options: { now?: Date } = {}): Promise<ProxyCa> {
  const now = options.now ?? new Date();
  const paths: CaPaths = {
    dir,
    certPath: join(dir, "ca.pem"),
    keyPath: join(dir, "ca-key.pem"),
    lockPath: join(dir, "ca.lock"),
  };
  ensurePrivateDir(dir);
  // Lock-free fast path. A failure here may be a writer mid-way, so only a read under the lock may
  // report a damaged file.
  const current = tryReadCa(paths);
  if (current && !isDue(current, now)) return current;
  return withLock(paths.lockPath, async () => {
    const onDisk = readCa(paths);
    if (onDisk && !isDue(onDisk, now)) return onDisk;
    if (onDisk) {
      renameSync(paths.certPath, `${paths.certPath}.old`);
      renameSync(paths.keyPath, `${paths.keyPath}.old`);
    }
    await createCa(paths, now);
    return readCa(paths)!;
  });
}

/** A fresh P-256 key pair: its PKCS#8 PEM to store, and the WebCrypto keys @peculiar/x509 signs with. */
export async function generateP256(): Promise<{ keyPem: string; keys: CryptoKeyPair }> {
  const { privateKey, publicKey } = await generateKeyPairAsync("ec", { namedCurve: "P-256" });
  return {
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
    keys: webKeys(privateKey, publicKey),
  };
}

/** Writes a world-readable file atomically (temp + rename), whatever the umask. */
export function writePublicFile(path: string, data: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(temporary, data);
  chmodSync(temporary, 0o644);
  renameSync(temporary, path);
}

function isDue(ca: ProxyCa, now: Date): boolean {
  return ca.notAfter.getTime() - now.getTime() < RENEW_BEFORE_MS;
}

function tryReadCa(paths: CaPaths): ProxyCa | undefined {
  try {
    return readCa(paths);
  } catch {
    return undefined;
  }
}

/** The CA on disk, undefined when there is none, or an error naming the damaged file. */
function readCa(paths: CaPaths): ProxyCa | undefined {
  const certPem = readCaFile(paths, paths.certPath);
  const keyPem = readCaFile(paths, paths.keyPath);
  if (certPem === undefined && keyPem === undefined) return undefined;
  if (certPem === undefined) throw damaged(paths, paths.certPath, "is missing");
  if (keyPem === undefined) throw damaged(paths, paths.keyPath, "is missing");

  let cert: x509.X509Certificate;
  try {
    cert = new x509.X509Certificate(certPem);
  } catch (cause) {
    throw damaged(paths, paths.certPath, "is not a PEM certificate", cause);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(keyPem);
  } catch (cause) {
    throw damaged(paths, paths.keyPath, "is not a PEM private key", cause);
  }
  const publicKey = createPublicKey(privateKey);
  const keySpki = publicKey.export({ type: "spki", format: "der" });
  if (!keySpki.equals(Buffer.from(cert.publicKey.rawData))) {
    throw damaged(paths, paths.keyPath, `does not belong to the certificate in ${paths.certPath}`);
  }
  let key: CryptoKeyPair;
  try {
    key = webKeys(privateKey, publicKey);
  } catch (cause) {
    throw damaged(paths, paths.keyPath, "is not an ECDSA P-256 key", cause);
  }
  return {
    certPem,
    keyPem,
    certPath: paths.certPath,
    keyPath: paths.keyPath,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    key,
    cert,
  };
}

function webKeys(privateKey: KeyObject, publicKey: KeyObject): CryptoKeyPair {
  return {
    privateKey: privateKey.toCryptoKey(EC_P256, false, ["sign"]) as CryptoKey,
    publicKey: publicKey.toCryptoKey(EC_P256, true, ["verify"]) as CryptoKey,
  };
}

function damaged(paths: CaPaths, file: string, problem: string, cause?: unknown): Error {
  return new UnexpectedError(
    `The svc proxy CA file ${file} ${problem}. Delete the folder ${paths.dir} and svc will create a ` +
      "new CA (anything that trusted the old one must then be given the new ca.pem).",
    { cause },
  );
}

async function createCa(paths: CaPaths, now: Date): Promise<void> {
  const { keyPem, keys } = await generateP256();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    // The random suffix tells apart the CAs of different machines in a trust store.
    name: `CN=svc local proxy CA ${randomBytes(4).toString("hex")}, O=svc`,
    keys,
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter: new Date(now.getTime() + CA_LIFETIME_MS),
    signingAlgorithm: ECDSA_SHA256,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  // Key first: a lock-free reader that sees the new key beside the old certificate finds they do not
  // match and waits for the lock.
  writePrivateFile(paths.keyPath, keyPem);
  writePublicFile(paths.certPath, cert.toString("pem"));
}

/** Runs `task` while holding an exclusive lock file (created with O_EXCL, holding our pid). */
async function withLock<T>(lockPath: string, task: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      writeFileSync(lockPath, String(process.pid), { flag: "wx", mode: 0o600 });
      break;
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
    }
    if (holderIsGone(lockPath)) {
      rmSync(lockPath, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new UnexpectedError(
        `Timed out waiting for ${lockPath}, held by another svc process creating the proxy CA in ` +
          `${dirname(lockPath)}. If no svc process is running, delete that file.`,
      );
    }
    await sleep(LOCK_POLL_MS);
  }
  try {
    return await task();
  } finally {
    rmSync(lockPath, { force: true });
  }
}

/** A holder that crashed never removes its lock; its pid no longer exists. */
function holderIsGone(lockPath: string): boolean {
  try {
    process.kill(Number(readFileSync(lockPath, "utf8")), 0);
    return false;
  } catch (error) {
    return errorCode(error) === "ESRCH";
  }
}

function readCaFile(paths: CaPaths, file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw damaged(paths, file, "cannot be read", error);
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}
