import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** Where svc keeps its state: `SVC_HOME`, or `~/.svc`. */
export function resolveHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.SVC_HOME;
  return configured ? resolve(configured) : join(homedir(), ".svc");
}

/** The layout of the state directory, in one place (ARCHITECTURE.md, "State on disk"). */
export function homeLayout(home: string) {
  const client = join(home, "client");
  const server = join(home, "server");
  const proxy = join(home, "proxy");
  return {
    home,
    client,
    clientConfig: join(client, "config.json"),
    identities: join(client, "identities"),
    clientLogs: join(client, "logs"),
    clientLog: join(client, "logs", "svc.log"),
    server,
    database: join(server, "svc.db"),
    masterKey: join(server, "master.key"),
    bootstrapSecret: join(server, "bootstrap.secret"),
    instanceId: join(server, "instance.id"),
    serverLogs: join(server, "logs"),
    /** Internal audit events (credential lifecycle, accounts, claims). */
    auditLog: join(server, "logs", "svc.log"),
    /** External audit events (the proxy's traffic), rotated on their own so they cannot push out the above. */
    externalAuditLog: join(server, "logs", "proxy.log"),
    daemonLog: join(server, "logs", "daemon.log"),
    daemonPid: join(server, "daemon.pid"),
    /** Held by the running daemon for its whole life: one home, one daemon (daemon/home-lock.ts). */
    daemonLock: join(server, "daemon.lock"),
    /** How the embedded daemon's last run ended: which PoP tokens a restart must refuse. */
    replayHorizon: join(server, "replay-horizon"),
    daemonState: join(server, "daemon.json"),
    providers: join(home, "providers"),
    proxy,
  };
}

export type HomeLayout = ReturnType<typeof homeLayout>;
