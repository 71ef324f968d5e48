/**
 * The environment `svc run` gives its command: common HTTP clients pointed at the proxy and trusting
 * the svc CA, provider keys replaced by a placeholder (the proxy injects the real credential), and
 * none of svc's own secrets left for the command to read.
 */

import { fileURLToPath } from "node:url";
import { PLACEHOLDER } from "./scrub.ts";

/** svc's preload for Node children (node-preload.cjs, shipped beside this module). */
export const NODE_PRELOAD = fileURLToPath(new URL("./node-preload.cjs", import.meta.url));

/** Both spellings: curl reads only lower-case http_proxy, other clients read either. */
const PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];

/** Always reached directly: the proxy itself and the command's own local servers. */
const LOCAL_HOSTS = ["localhost", "127.0.0.1", "::1"];

/**
 * Where Node, OpenSSL-based clients, Python requests, curl and git look for CA certificates. All but
 * NODE_EXTRA_CA_CERTS replace the default roots, so the bundle must hold the public roots as well as
 * the svc CA (hosts the proxy only tunnels present their own certificates).
 */
const CA_BUNDLE_VARIABLES = [
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "GIT_SSL_CAINFO",
];

/** svc's own secrets: with them the command could open the vault itself. */
const SVC_SECRET_VARIABLES = ["SVC_MASTER_KEY", "SVC_MASTER_KEY_FILE"];

/**
 * ALL_PROXY is the fallback for schemes without their own variable, and often names a SOCKS proxy.
 * Some clients prefer it or read nothing else, so a parent's value would send traffic around svc;
 * pointing it at svc instead would break non-HTTP protocols the proxy cannot carry. So it goes.
 */
const BYPASS_VARIABLES = ["ALL_PROXY", "all_proxy"];

/** Shorter values would match ordinary variables by accident. */
const MIN_SECRET_LENGTH = 8;

export interface ChildEnvironmentOptions {
  /** The environment to start from (normally process.env); not modified. */
  base: NodeJS.ProcessEnv;
  /** The proxy's URL with its credential, e.g. `http://svc:<token>@127.0.0.1:41234`. */
  proxyUrl: string;
  /** A PEM bundle with the svc CA and the public roots. */
  caBundlePath: string;
  /** The variables the connected providers declare for their keys (e.g. OPENAI_API_KEY). */
  placeholders: readonly string[];
  /** Credential values the command must not see in any variable. */
  secrets?: readonly string[];
  /** Non-secret settings of the connections (AWS_REGION), set unless the parent set them. */
  defaults?: Readonly<Record<string, string>>;
  /**
   * A CommonJS file every Node process of the child loads first (NODE_OPTIONS=--require): it
   * sends the traffic of a Node too old for NODE_USE_ENV_PROXY through the proxy.
   */
  nodePreload?: string;
}

export interface ChildEnvironment {
  env: NodeJS.ProcessEnv;
  /** Variables whose value held one of `secrets` and now hold the placeholder. */
  replaced: string[];
}

export function childEnvironment(options: ChildEnvironmentOptions): ChildEnvironment {
  const env: NodeJS.ProcessEnv = { ...options.base };
  for (const name of [...SVC_SECRET_VARIABLES, ...BYPASS_VARIABLES]) delete env[name];
  const replaced = replaceSecretValues(env, options.secrets ?? []);
  // A real key inherited under a provider's variable would bypass the proxy: the placeholder wins.
  for (const name of options.placeholders) env[name] = PLACEHOLDER;
  for (const [name, value] of Object.entries(options.defaults ?? {})) env[name] ??= value;

  const noProxy = noProxyList(env).join(",");
  for (const name of PROXY_VARIABLES) env[name] = options.proxyUrl;
  env.NO_PROXY = noProxy;
  env.no_proxy = noProxy;
  // Node's own fetch and http(s) honour the proxy variables only when asked (Node 24+).
  env.NODE_USE_ENV_PROXY = "1";
  if (options.nodePreload) env.NODE_OPTIONS = withRequire(env.NODE_OPTIONS, options.nodePreload);
  for (const name of CA_BUNDLE_VARIABLES) env[name] = options.caBundlePath;
  return { env, replaced };
}

/** NODE_OPTIONS plus `--require "<path>"` (Node parses double-quoted values, with `\` escapes). */
function withRequire(nodeOptions: string | undefined, path: string): string {
  const quoted = `"${path.replace(/["\\]/g, "\\$&")}"`;
  return [nodeOptions?.trim(), `--require ${quoted}`].filter(Boolean).join(" ");
}

function replaceSecretValues(env: NodeJS.ProcessEnv, secrets: readonly string[]): string[] {
  const needles = secrets.filter((secret) => secret.length >= MIN_SECRET_LENGTH);
  const replaced: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && needles.some((secret) => value.includes(secret))) {
      env[name] = PLACEHOLDER;
      replaced.push(name);
    }
  }
  return replaced;
}

/** Both spellings' entries (clients read one or the other), then the local hosts; no duplicates. */
function noProxyList(env: NodeJS.ProcessEnv): string[] {
  const entries = [env.NO_PROXY, env.no_proxy, LOCAL_HOSTS.join(",")]
    .flatMap((value) => (value ?? "").split(","))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  return [...new Set(entries)];
}
