/**
 * A local HTTPS server on 127.0.0.1 that answers for any host name: each name (SNI) gets a leaf of a
 * CA of the server's own, which clients trust through `caPath`. The base of the test upstreams.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadOrCreateCa } from "../../src/proxy/ca.ts";
import { LeafCertificates } from "../../src/proxy/leaf-certs.ts";

export interface LocalHttpsHost {
  server: https.Server;
  port: number;
  /** The server's own CA (PEM file): trust it via NODE_EXTRA_CA_CERTS. */
  caPath: string;
  /** SVC_PROXY_CONNECT_TO sending each host's port 443 here. */
  connectTo(hosts: readonly string[]): string;
  close(): Promise<void>;
}

export async function startLocalHttpsHost(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<LocalHttpsHost> {
  const dir = mkdtempSync(join(tmpdir(), "svc-https-host-"));
  const ca = await loadOrCreateCa(dir);
  const leaves = new LeafCertificates(ca);
  // Clients that send no SNI (an IP address) get the 127.0.0.1 certificate.
  const fallback = await leaves.certificateFor("127.0.0.1");
  const server = https.createServer(
    {
      SNICallback: (name, callback) => {
        leaves.secureContextFor(name).then(
          (context) => callback(null, context),
          (error: Error) => callback(error, undefined),
        );
      },
      cert: `${fallback.certPem}\n${ca.certPem}`,
      key: fallback.keyPem,
    } as https.ServerOptions,
    handler,
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    caPath: ca.certPath,
    connectTo: (hosts) => hosts.map((host) => `${host}:443:127.0.0.1:${port}`).join(","),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
