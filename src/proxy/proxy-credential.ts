/**
 * The credential that binds a `svc run` proxy to its own child. The proxy listens on a loopback
 * port that every local process (and every OS user) can reach; only the child receives this random
 * credential, inside the proxy URLs of its environment (`http://svc:<token>@127.0.0.1:<port>`), and
 * its HTTP clients send it back as `Proxy-Authorization: Basic` (RFC 9110 section 11.7.1).
 */
import { randomBytes } from "node:crypto";
import { equalSecrets } from "../core/constant-time.ts";

/** The user name in the proxy URL; only the password is secret. */
const USER = "svc";

/** What the proxy answers without the credential: clients that can retry with one know the scheme. */
export const PROXY_AUTHENTICATE = 'Basic realm="svc run"';

export class ProxyCredential {
  readonly #expected: string;
  readonly #token: string;

  /** A fresh credential (32 random bytes); `token` is for tests that need a known value. */
  constructor(token = randomBytes(32).toString("base64url")) {
    this.#token = token;
    this.#expected = `Basic ${Buffer.from(`${USER}:${token}`).toString("base64")}`;
  }

  /** The proxy's URL with the credential in its userinfo, as clients read it from HTTPS_PROXY. */
  embedIn(proxyUrl: string): string {
    const url = new URL(proxyUrl);
    url.username = USER;
    url.password = this.#token;
    // URL keeps a trailing slash after the host; proxy variables are conventionally written without.
    return url.href.replace(/\/$/, "");
  }

  /** Whether a request's Proxy-Authorization header carries this credential (constant time). */
  accepts(header: string | string[] | undefined): boolean {
    if (typeof header !== "string") return false;
    // The scheme is case-insensitive; the credential itself is compared in constant time.
    const match = /^basic\s+(\S+)$/i.exec(header.trim());
    return match !== null && equalSecrets(`Basic ${match[1]}`, this.#expected);
  }
}
