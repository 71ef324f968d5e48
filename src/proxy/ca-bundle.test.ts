import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateCa, type ProxyCa } from "./ca.ts";
import { writeCaBundle } from "./ca-bundle.ts";

let root: string;
let ca: ProxyCa;
let otherCa: ProxyCa;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "svc-bundle-"));
  ca = await loadOrCreateCa(join(root, "proxy"));
  otherCa = await loadOrCreateCa(join(root, "corporate"));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function certificatesIn(path: string): string[] {
  return (
    readFileSync(path, "utf8").match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  );
}

describe("writeCaBundle", () => {
  it("holds Node's roots and the svc CA, readable by everyone", () => {
    const path = writeCaBundle(ca, join(root, "plain"), {});

    expect(path).toBe(join(root, "plain", "ca-bundle.pem"));
    expect(statSync(path).mode & 0o777).toBe(0o644);
    const certificates = certificatesIn(path);
    expect(certificates).toHaveLength(tls.rootCertificates.length + 1);
    expect(certificates.at(-1)).toBe(ca.certPem.trim());
  });

  it("adds the certificates of NODE_EXTRA_CA_CERTS", () => {
    const extra = join(root, "extra.pem");
    writeFileSync(extra, `# corporate proxy\n${otherCa.certPem}`);
    const path = writeCaBundle(ca, join(root, "extra"), { NODE_EXTRA_CA_CERTS: extra });

    const certificates = certificatesIn(path);
    expect(certificates).toHaveLength(tls.rootCertificates.length + 2);
    expect(certificates).toContain(otherCa.certPem.trim());
  });

  it("skips a NODE_EXTRA_CA_CERTS file that cannot be read", () => {
    const path = writeCaBundle(ca, join(root, "missing"), { NODE_EXTRA_CA_CERTS: join(root, "nope.pem") });
    expect(certificatesIn(path)).toHaveLength(tls.rootCertificates.length + 1);
  });

  it("does not grow when NODE_EXTRA_CA_CERTS is an earlier bundle", () => {
    const dir = join(root, "nested");
    const path = writeCaBundle(ca, dir, {});
    writeCaBundle(ca, dir, { NODE_EXTRA_CA_CERTS: path });
    expect(certificatesIn(path)).toHaveLength(tls.rootCertificates.length + 1);
  });

  it("rewrites the file only when its content changes", () => {
    const dir = join(root, "rewrite");
    const path = writeCaBundle(ca, dir, {});
    const before = statSync(path).ino;
    writeCaBundle(ca, dir, {});
    expect(statSync(path).ino).toBe(before);
    writeCaBundle(otherCa, dir, {});
    expect(statSync(path).ino).not.toBe(before);
    expect(certificatesIn(path).at(-1)).toBe(otherCa.certPem.trim());
  });
});
