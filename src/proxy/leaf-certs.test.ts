import { createPrivateKey, X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { InvalidInputError } from "../core/errors.ts";
import { loadOrCreateCa, type ProxyCa } from "./ca.ts";
import { LeafCertificates } from "./leaf-certs.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

let root: string;
let ca: ProxyCa;
let caCert: X509Certificate;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "svc-leaf-"));
  ca = await loadOrCreateCa(join(root, "proxy"));
  caCert = new X509Certificate(ca.certPem);
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

afterEach(() => {
  vi.restoreAllMocks();
});

async function leafOf(leaves: LeafCertificates, servername: string): Promise<X509Certificate> {
  return new X509Certificate((await leaves.certificateFor(servername)).certPem);
}

function countGenerations() {
  return vi.spyOn(x509.X509CertificateGenerator, "create");
}

describe("LeafCertificates", () => {
  it("issues a 30-day serverAuth leaf for the host, signed by the CA", async () => {
    const now = new Date();
    const leaves = new LeafCertificates(ca, { now: () => now });
    const { certPem, keyPem } = await leaves.certificateFor("api.openai.com");
    const leaf = new X509Certificate(certPem);

    expect(leaf.verify(caCert.publicKey)).toBe(true);
    expect(leaf.checkIssued(caCert)).toBe(true);
    expect(leaf.checkHost("api.openai.com")).toBe("api.openai.com");
    expect(leaf.checkHost("other.openai.com")).toBeUndefined();
    expect(leaf.subjectAltName).toBe("DNS:api.openai.com");
    expect(leaf.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]);
    expect(leaf.ca).toBe(false);
    expect(leaf.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(leaf.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    const lifetimeMs = new Date(leaf.validTo).getTime() - now.getTime();
    expect(Math.abs(lifetimeMs - 30 * DAY_MS)).toBeLessThan(1000);

    const parsed = new x509.X509Certificate(certPem);
    expect(parsed.getExtension(x509.KeyUsagesExtension)?.usages).toBe(x509.KeyUsageFlags.digitalSignature);
    expect(parsed.getExtension(x509.BasicConstraintsExtension)?.critical).toBe(true);
    expect(parsed.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(
      ca.cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
  });

  it("gives each leaf a random serial number", async () => {
    const leaves = new LeafCertificates(ca);
    const serials = await Promise.all(["a.test", "b.test"].map((host) => leafOf(leaves, host)));
    expect(serials[0].serialNumber).not.toBe(serials[1].serialNumber);
    expect(serials[0].serialNumber).toMatch(/^[0-9A-F]{30,34}$/);
  });

  it("issues an IP address SAN for IP literals", async () => {
    const leaves = new LeafCertificates(ca);
    const v4 = await leafOf(leaves, "127.0.0.1");
    expect(v4.subjectAltName).toBe("IP Address:127.0.0.1");
    expect(v4.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect((await leafOf(leaves, "[::1]")).checkIP("::1")).toBe("::1");
  });

  it("treats names case-insensitively and ignores a trailing dot", async () => {
    const leaves = new LeafCertificates(ca);
    const generations = countGenerations();
    const first = await leaves.certificateFor("API.Example.test.");
    const second = await leaves.certificateFor("api.example.test");
    expect(second).toEqual(first);
    expect(generations).toHaveBeenCalledTimes(1);
  });

  it("rejects a server name that is not a host name or IP", async () => {
    const leaves = new LeafCertificates(ca);
    await expect(leaves.certificateFor("evil.test,CN=x")).rejects.toThrow(InvalidInputError);
    await expect(leaves.certificateFor("")).rejects.toThrow(InvalidInputError);
  });

  it("caches a leaf and its secure context", async () => {
    const leaves = new LeafCertificates(ca);
    const first = await leaves.certificateFor("api.openai.com");
    const context = await leaves.secureContextFor("api.openai.com");
    expect(await leaves.certificateFor("api.openai.com")).toEqual(first);
    expect(await leaves.secureContextFor("api.openai.com")).toBe(context);
  });

  it("generates once for ten concurrent requests for the same host", async () => {
    const leaves = new LeafCertificates(ca);
    const generations = countGenerations();
    const results = await Promise.all(
      Array.from({ length: 10 }, () => leaves.certificateFor("api.openai.com")),
    );
    expect(generations).toHaveBeenCalledTimes(1);
    expect(new Set(results.map((result) => result.certPem)).size).toBe(1);
  });

  it("renews a leaf within a day of expiry", async () => {
    let now = new Date();
    const leaves = new LeafCertificates(ca, { now: () => now });
    const first = await leafOf(leaves, "api.openai.com");

    now = new Date(now.getTime() + 28 * DAY_MS);
    expect((await leafOf(leaves, "api.openai.com")).serialNumber).toBe(first.serialNumber);
    now = new Date(now.getTime() + 1.5 * DAY_MS);
    const renewed = await leafOf(leaves, "api.openai.com");
    expect(renewed.serialNumber).not.toBe(first.serialNumber);
    expect(new Date(renewed.validTo).getTime()).toBeGreaterThan(now.getTime() + 29 * DAY_MS);
  });

  it("never outlives the CA", async () => {
    const shortCa = await loadOrCreateCa(join(root, "short"), { now: new Date(Date.now() - 720 * DAY_MS) });
    const leaves = new LeafCertificates(shortCa);
    const generations = countGenerations();
    const leaf = await leafOf(leaves, "api.openai.com");
    expect(new Date(leaf.validTo)).toEqual(shortCa.notAfter);
    await leafOf(leaves, "api.openai.com");
    expect(generations).toHaveBeenCalledTimes(1);
  });

  it("evicts the least recently used host beyond max", async () => {
    const leaves = new LeafCertificates(ca, { max: 2 });
    const generations = countGenerations();
    await leaves.certificateFor("a.test");
    await leaves.certificateFor("b.test");
    await leaves.certificateFor("a.test");
    await leaves.certificateFor("c.test");
    expect(generations).toHaveBeenCalledTimes(3);
    await leaves.certificateFor("a.test");
    expect(generations).toHaveBeenCalledTimes(3);
    await leaves.certificateFor("b.test");
    expect(generations).toHaveBeenCalledTimes(4);
  });

  it("retries a generation that failed", async () => {
    const leaves = new LeafCertificates(ca);
    countGenerations().mockRejectedValueOnce(new Error("boom"));
    await expect(leaves.certificateFor("api.openai.com")).rejects.toThrow("boom");
    await expect(leaves.certificateFor("api.openai.com")).resolves.toHaveProperty("certPem");
  });
});

describe("TLS handshake through secureContextFor", () => {
  let server: tls.Server;
  let port: number;

  beforeAll(async () => {
    const leaves = new LeafCertificates(ca);
    server = tls.createServer(
      {
        SNICallback: (servername, done) => {
          leaves.secureContextFor(servername).then((context) => done(null, context), done);
        },
      },
      (socket) => socket.end("hello"),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  function connect(options: tls.ConnectionOptions): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: "127.0.0.1", port, servername: "api.example.test", ...options });
      let received = "";
      socket.on("data", (chunk) => {
        received += chunk;
      });
      socket.on("end", () => resolve(received));
      socket.on("error", reject);
    });
  }

  it("is trusted by a client that trusts the CA", async () => {
    expect(await connect({ ca: [ca.certPem] })).toBe("hello");
  });

  it("is refused by a client that does not", async () => {
    await expect(connect({})).rejects.toMatchObject({ code: "SELF_SIGNED_CERT_IN_CHAIN" });
  });
});
