/**
 * Per-host TLS leaves signed by the svc CA, for the hosts the proxy intercepts. Each leaf is made
 * once, kept in a bounded LRU, shared by concurrent handshakes for the same host and renewed a day
 * before it expires.
 */
import "reflect-metadata";
import { isIP } from "node:net";
import tls from "node:tls";
import * as x509 from "@peculiar/x509";
import { InvalidInputError } from "../core/errors.ts";
// Importing ./ca.ts also registers Node's WebCrypto as the @peculiar/x509 crypto provider.
import { CLOCK_SKEW_MS, ECDSA_SHA256, generateP256, type ProxyCa } from "./ca.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
const LEAF_LIFETIME_MS = 30 * DAY_MS;
const RENEW_BEFORE_MS = DAY_MS;
const DEFAULT_MAX = 1000;
const HOST_NAME = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;

interface Leaf {
  certPem: string;
  keyPem: string;
  notAfter: Date;
  context: tls.SecureContext;
}

export class LeafCertificates {
  readonly #ca: ProxyCa;
  readonly #now: () => Date;
  readonly #max: number;
  /** Host → leaf, least recently used first. Holds promises so concurrent callers share one generation. */
  readonly #leaves = new Map<string, Promise<Leaf>>();

  constructor(ca: ProxyCa, options: { now?: () => Date; max?: number } = {}) {
    this.#ca = ca;
    this.#now = options.now ?? (() => new Date());
    this.#max = options.max ?? DEFAULT_MAX;
  }

  /** For `tls.createServer({SNICallback})`: the leaf for `servername`, chained to the CA. */
  async secureContextFor(servername: string): Promise<tls.SecureContext> {
    return (await this.#leafFor(normalizeHost(servername))).context;
  }

  async certificateFor(servername: string): Promise<{ certPem: string; keyPem: string }> {
    const { certPem, keyPem } = await this.#leafFor(normalizeHost(servername));
    return { certPem, keyPem };
  }

  async #leafFor(host: string): Promise<Leaf> {
    const cached = this.#leaves.get(host);
    if (!cached) return this.#issue(host);
    this.#leaves.delete(host);
    this.#leaves.set(host, cached);
    const leaf = await cached;
    if (!this.#isDue(leaf)) return leaf;
    // The first caller to notice starts the renewal; later ones find and share it.
    if (this.#leaves.get(host) === cached) return this.#issue(host);
    return this.#leafFor(host);
  }

  #issue(host: string): Promise<Leaf> {
    const pending = issueLeaf(this.#ca, host, this.#now());
    this.#leaves.set(host, pending);
    if (this.#leaves.size > this.#max) this.#leaves.delete(this.#leaves.keys().next().value!);
    // A failed generation is not cached: the next handshake tries again.
    pending.catch(() => {
      if (this.#leaves.get(host) === pending) this.#leaves.delete(host);
    });
    return pending;
  }

  #isDue(leaf: Leaf): boolean {
    // A leaf capped at the CA's expiry cannot be renewed into a longer one.
    if (leaf.notAfter.getTime() >= this.#ca.notAfter.getTime()) return false;
    return leaf.notAfter.getTime() - this.#now().getTime() < RENEW_BEFORE_MS;
  }
}

/** Lower case, no trailing dot, no IPv6 brackets; rejects anything that is not a host name or IP. */
function normalizeHost(servername: string): string {
  const host = servername
    .toLowerCase()
    .replace(/\.$/, "")
    .replace(/^\[(.*)\]$/, "$1");
  if (isIP(host) || HOST_NAME.test(host)) return host;
  throw new InvalidInputError(
    `Cannot issue a certificate for '${servername}': not a host name or IP address.`,
  );
}

async function issueLeaf(ca: ProxyCa, host: string, now: Date): Promise<Leaf> {
  const { keyPem, keys } = await generateP256();
  const cert = await x509.X509CertificateGenerator.create({
    subject: [{ CN: [host] }],
    issuer: ca.cert.subjectName,
    publicKey: keys.publicKey,
    signingKey: ca.key.privateKey,
    signingAlgorithm: ECDSA_SHA256,
    // Serial number: left out, so the generator picks 16 random bytes.
    notBefore: new Date(Math.max(now.getTime() - CLOCK_SKEW_MS, ca.notBefore.getTime())),
    notAfter: new Date(Math.min(now.getTime() + LEAF_LIFETIME_MS, ca.notAfter.getTime())),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: isIP(host) ? "ip" : "dns", value: host }]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert.publicKey),
    ],
  });
  const certPem = cert.toString("pem");
  const context = tls.createSecureContext({ cert: `${certPem}\n${ca.certPem}`, key: keyPem });
  return { certPem, keyPem, notAfter: cert.notAfter, context };
}
