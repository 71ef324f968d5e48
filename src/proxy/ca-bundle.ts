/**
 * The CA bundle handed to child processes (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
 * NODE_EXTRA_CA_CERTS). Those variables replace a client's trust store rather than add to it, so
 * the bundle carries Node's public roots and the user's extra CAs beside the svc CA: HTTPS the
 * proxy tunnels without intercepting must still verify.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import tls from "node:tls";
import { ensurePrivateDir } from "../core/secure-fs.ts";
import { type ProxyCa, writePublicFile } from "./ca.ts";

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Writes dir/ca-bundle.pem (0644) when its content changed, and returns its path. */
export function writeCaBundle(ca: ProxyCa, dir: string, env: NodeJS.ProcessEnv = process.env): string {
  const path = join(dir, "ca-bundle.pem");
  // A Set drops duplicates, so a NODE_EXTRA_CA_CERTS that points at an earlier bundle (svc run
  // inside svc run) does not make the bundle grow.
  const certificates = new Set([
    ...tls.rootCertificates.map((pem) => pem.trim()),
    ...readCertificates(env.NODE_EXTRA_CA_CERTS),
    ca.certPem.trim(),
  ]);
  const content = `${[...certificates].join("\n")}\n`;
  if (readIfPresent(path) !== content) {
    ensurePrivateDir(dir);
    writePublicFile(path, content);
  }
  return path;
}

/** The PEM certificates in `file`; none when it is unset or unreadable, as Node itself only warns. */
function readCertificates(file: string | undefined): string[] {
  if (!file) return [];
  return readIfPresent(file)?.match(PEM_CERTIFICATE) ?? [];
}

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}
