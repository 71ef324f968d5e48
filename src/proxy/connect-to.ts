/**
 * SVC_PROXY_CONNECT_TO: where the proxy really connects for a requested host and port, in curl's
 * `--connect-to` syntax, comma-separated. It points a real API host at a local server (tests, staging)
 * while the child keeps using the real name, so the Host header, SNI and routing stay unchanged.
 */
import { isIPv6 } from "node:net";
import { InvalidInputError } from "../core/errors.ts";

export interface ConnectToRule {
  /** The host to match: lower case, IPv6 without brackets. Undefined matches any host. */
  fromHost?: string;
  /** The port to match. Undefined matches any port. */
  fromPort?: number;
  /** The host to connect to instead. Undefined keeps the requested host. */
  toHost?: string;
  /** The port to connect to instead. Undefined keeps the requested port. */
  toPort?: number;
}

const SYNTAX =
  "HOST1:PORT1:HOST2:PORT2[,...] as in curl --connect-to " +
  "(empty HOST1 or PORT1 matches any, empty HOST2 or PORT2 keeps the original, IPv6 in brackets)";

/** A host field is a bracketed IPv6 literal or a run of non-colons; a port field is a run of non-colons. */
const ENTRY = /^(\[[^\]]*\]|[^:[\]]*):([^:]*):(\[[^\]]*\]|[^:[\]]*):([^:]*)$/;
const HOST_NAME = /^[a-z0-9._-]+$/i;

/** The rules in `value`, in order; an unset or blank value means none. */
export function parseConnectTo(value: string | undefined): ConnectToRule[] {
  if (!value) return [];
  return value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map(parseEntry);
}

function parseEntry(entry: string): ConnectToRule {
  const invalid = (reason: string) =>
    new InvalidInputError(`SVC_PROXY_CONNECT_TO: invalid entry "${entry}": ${reason}; expected ${SYNTAX}`);
  const fields = ENTRY.exec(entry);
  if (!fields) throw invalid("it needs four colon-separated fields");
  const [, fromHost, fromPort, toHost, toPort] = fields;

  const host = (field: string): string | undefined => {
    if (field === "") return undefined;
    if (field.startsWith("[")) {
      const literal = field.slice(1, -1);
      if (!isIPv6(literal)) throw invalid(`${field} is not an IPv6 address`);
      return literal.toLowerCase();
    }
    if (!HOST_NAME.test(field)) throw invalid(`"${field}" is not a host name or IPv4 address`);
    return field.toLowerCase();
  };
  const port = (field: string): number | undefined => {
    if (field === "") return undefined;
    if (!/^\d+$/.test(field)) throw invalid(`port "${field}" is not a number`);
    const number = Number(field);
    if (number < 1 || number > 65535) throw invalid(`port ${field} is out of range (1-65535)`);
    return number;
  };

  return { fromHost: host(fromHost), fromPort: port(fromPort), toHost: host(toHost), toPort: port(toPort) };
}

/**
 * Where to connect for `host` (brackets optional) and `port`: the first matching rule wins, as in
 * curl; no match connects to the requested target. The host returned never has brackets.
 */
export function connectTarget(
  rules: readonly ConnectToRule[],
  host: string,
  port: number,
): { host: string; port: number } {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  const name = bare.toLowerCase();
  const rule = rules.find(
    (candidate) =>
      (candidate.fromHost === undefined || candidate.fromHost === name) &&
      (candidate.fromPort === undefined || candidate.fromPort === port),
  );
  return { host: rule?.toHost ?? bare, port: rule?.toPort ?? port };
}
