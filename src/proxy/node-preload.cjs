"use strict";
/**
 * Loaded into every Node process `svc run` starts (NODE_OPTIONS=--require ...). Node honours
 * HTTPS_PROXY only from 24.5 and 22.21 on, with NODE_USE_ENV_PROXY=1 (which svc sets); an older
 * Node (18, 20, early 22) would connect directly, so the child would send its placeholder to the
 * real API and get no credential. On such a Node this sends `https` requests made with the global
 * agent, and `fetch`, through the proxy in HTTPS_PROXY, with the credential from its URL. On a Node
 * that does this itself it does nothing. Plain JavaScript: it runs in the child's Node, whatever its
 * version, before the child's own code.
 */
(() => {
  const env = process.env;
  const proxyUrl = env.https_proxy || env.HTTPS_PROXY;
  if (!proxyUrl || handlesEnvProxy(process.versions.node)) return;
  let proxy;
  try {
    proxy = new URL(proxyUrl);
  } catch {
    return;
  }
  const http = require("node:http");
  const https = require("node:https");
  const net = require("node:net");
  const tls = require("node:tls");

  const authorization = proxy.username
    ? `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}`
    : undefined;
  const bypassed = noProxyMatcher(env.no_proxy || env.NO_PROXY || "");

  /** An https agent whose connections are CONNECT tunnels through the proxy. */
  class TunnellingAgent extends https.Agent {
    createConnection(options, callback) {
      const host = options.host || options.hostname || "localhost";
      const port = Number(options.port) || 443;
      if (bypassed(host)) return super.createConnection(options);
      const authority = net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
      const connect = http.request({
        host: proxy.hostname,
        port: Number(proxy.port) || 80,
        method: "CONNECT",
        path: authority,
        headers: { host: authority, ...(authorization ? { "proxy-authorization": authorization } : {}) },
        agent: false,
      });
      connect.once("connect", (response, socket) => {
        if (response.statusCode !== 200) {
          socket.destroy();
          callback(new Error(`the svc run proxy answered ${response.statusCode} to CONNECT ${authority}`));
          return;
        }
        const servername = options.servername || (net.isIP(host) ? undefined : host);
        callback(null, tls.connect({ ...options, socket, servername }));
      });
      connect.once("error", callback);
      connect.end();
      return undefined;
    }
  }
  https.globalAgent = new TunnellingAgent({ keepAlive: true });

  // fetch: undici's proxy dispatcher, loaded on the first call so that children that never fetch
  // pay nothing; Node's bundled fetch reads the global dispatcher undici sets.
  const nodeFetch = globalThis.fetch;
  if (typeof nodeFetch === "function") {
    let dispatcherSet = false;
    globalThis.fetch = function fetch(input, init) {
      if (!dispatcherSet) {
        dispatcherSet = true;
        const { EnvHttpProxyAgent, setGlobalDispatcher } = require("undici");
        setGlobalDispatcher(new EnvHttpProxyAgent());
      }
      return nodeFetch.call(this, input, init);
    };
  }

  /** Whether this Node version tunnels through HTTPS_PROXY itself under NODE_USE_ENV_PROXY. */
  function handlesEnvProxy(version) {
    const [major, minor] = version.split(".").map(Number);
    return major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21);
  }

  /** NO_PROXY as curl reads it: `*`, or host names matching themselves and their subdomains. */
  function noProxyMatcher(list) {
    const entries = list
      .split(",")
      .map((entry) => entry.trim().toLowerCase().replace(/^\./, ""))
      // A port is dropped from `host:port`, not from an IPv6 address such as `::1`.
      .map((entry) => (entry.split(":").length === 2 ? entry.replace(/:\d+$/, "") : entry))
      .filter((entry) => entry !== "");
    return (host) => {
      const name = host.toLowerCase().replace(/^\[|\]$/g, "");
      return entries.some((entry) => entry === "*" || name === entry || name.endsWith(`.${entry}`));
    };
  }
})();
