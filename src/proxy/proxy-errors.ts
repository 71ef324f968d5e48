/**
 * The responses the proxy writes itself, shaped so that the SDKs a child uses show svc's sentence:
 * the openai and Anthropic SDKs read `error.message`, Octokit reads `message`, and python-requests'
 * `raise_for_status()` prints the reason phrase, which carries the sentence too. `x-svc-error`
 * names the failure for scripts (an svc error class name where one fits).
 */
import http from "node:http";

export interface ProxyFailure {
  status: number;
  /** A stable name: an svc error class (`DaemonUnavailableError`) or the proxy's own. */
  code: string;
  /** The sentence a person reads. */
  message: string;
}

export function proxyErrorBody(failure: ProxyFailure): string {
  const { code, message } = failure;
  return `${JSON.stringify({ error: { type: "svc_proxy", code, message }, message })}\n`;
}

/** The sentence as a reason phrase: printable ASCII only (RFC 9112), bounded. */
function reasonPhrase(failure: ProxyFailure): string {
  const phrase = failure.message.replace(/[^\x20-\x7e]+/g, " ").trim();
  if (phrase === "") return http.STATUS_CODES[failure.status] ?? "";
  return phrase.length > 300 ? `${phrase.slice(0, 297)}...` : phrase;
}

/** Writes `failure` on a proxy response whose headers have not been sent. */
export function writeProxyError(
  response: http.ServerResponse,
  failure: ProxyFailure,
  headers: http.OutgoingHttpHeaders = {},
): void {
  const body = proxyErrorBody(failure);
  response.writeHead(failure.status, reasonPhrase(failure), {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    "x-svc-error": failure.code,
  });
  response.end(body);
}

/** The same response as raw bytes, for a socket no HTTP server writes to (CONNECT, upgrades). */
export function rawProxyError(failure: ProxyFailure, extraHeaders: string[] = []): string {
  const body = proxyErrorBody(failure);
  return [
    `HTTP/1.1 ${failure.status} ${reasonPhrase(failure)}`,
    "content-type: application/json",
    `content-length: ${Buffer.byteLength(body)}`,
    `x-svc-error: ${failure.code}`,
    "connection: close",
    ...extraHeaders,
    "",
    body,
  ].join("\r\n");
}

/** OpenSSL's verdicts on a certificate chain the proxy does not trust. */
const UNTRUSTED_CHAIN = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
]);

/**
 * Why the proxy got no answer from an upstream. For a certificate it does not trust, the advice
 * is about svc's trust store (the proxy verifies, not the child), not Node's own flags.
 */
export function upstreamFailure(host: string, port: number, error: NodeJS.ErrnoException): ProxyFailure {
  const where = `${host}:${port}`;
  if (error.code && UNTRUSTED_CHAIN.has(error.code)) {
    return {
      status: 502,
      code: "UntrustedUpstreamCertificate",
      message:
        `svc proxy does not trust the certificate of ${where} (${error.code}). If this server uses a ` +
        "private CA you trust, start svc run with NODE_EXTRA_CA_CERTS=/path/to/that-ca.pem: the proxy " +
        "verifies upstreams with the system roots plus that file (the child's CA bundle includes it too).",
    };
  }
  // Node's own message may end in advice for Node's flags, which do not apply to svc's proxy.
  const reason = error.message.replace(/\s*\(?(?:Use|Try|Consider) --use-[\w-]+.*$/is, "");
  return {
    status: 502,
    code: "EndpointUnreachableError",
    message: `svc proxy could not reach ${where}: ${reason}`,
  };
}
