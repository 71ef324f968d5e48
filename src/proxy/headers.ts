/**
 * The proxy's header rules, both ways: what of a child's request goes upstream, and what of an
 * upstream answer reaches the child (hop-by-hop headers dropped both ways, secrets scrubbed).
 */
import type http from "node:http";
import { scrubHeaders } from "./scrub.ts";

/** Headers that describe one hop, not the message (RFC 9110 section 7.6.1), plus proxy credentials. */
const HOP_BY_HOP = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
]);

export type ResponseHeaders = Record<string, string | string[]>;

/** undici's raw header list as an object: lower-case names, a repeated header as an array. */
export function headersFromRaw(raw: readonly Buffer[]): ResponseHeaders {
  const headers: ResponseHeaders = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString("latin1").toLowerCase();
    const value = raw[i + 1]!.toString("latin1");
    const existing = headers[name];
    if (existing === undefined) headers[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else headers[name] = [existing, value];
  }
  return headers;
}

/** The headers of an upstream answer as the child gets them: secrets scrubbed, hop-by-hop ones dropped. */
export function headersForChild(
  headers: ResponseHeaders | http.IncomingHttpHeaders,
  secrets: readonly string[],
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = secrets.length > 0 ? scrubHeaders(headers, secrets) : { ...headers };
  for (const name of Object.keys(out)) if (HOP_BY_HOP.has(name)) delete out[name];
  return out;
}

/** The child's request headers as sent upstream: hop-by-hop and `removeHeaders` dropped, `setHeaders` set. */
export function forwardableHeaders(
  headers: http.IncomingHttpHeaders,
  plan: { setHeaders?: Record<string, string>; removeHeaders?: readonly string[] } = {},
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  const listed = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase()),
  );
  for (const name of plan.removeHeaders ?? []) listed.add(name);
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name)) continue;
    out[name] = value;
  }
  for (const [name, value] of Object.entries(plan.setHeaders ?? {})) out[name.toLowerCase()] = value;
  return out;
}
