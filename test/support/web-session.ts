/**
 * A scripted browser for the dashboard's API: one cookie jar, the daemon's own Origin on every
 * request, and the session's CSRF token on state changes (unless a test leaves them out).
 */
export class WebSession {
  readonly baseUrl: string;
  cookie: string | undefined;
  csrf: string | undefined;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
  }

  async request(
    method: string,
    path: string,
    options: {
      json?: unknown;
      form?: Record<string, string>;
      origin?: string | null;
      csrf?: string | null;
    } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.cookie) headers.cookie = this.cookie;
    const origin = options.origin === undefined ? new URL(this.baseUrl).origin : options.origin;
    if (origin !== null && method !== "GET") headers.origin = origin;
    const csrf = options.csrf === undefined ? this.csrf : options.csrf;
    if (csrf && method !== "GET" && !options.form) headers["x-csrf-token"] = csrf;
    let body: string | undefined;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    } else if (options.form) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      body = new URLSearchParams(options.form).toString();
    }
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body, redirect: "manual" });
    const set = response.headers.get("set-cookie");
    if (set) {
      const value = set.split(";")[0]!;
      this.cookie = value.endsWith("=") ? undefined : value;
    }
    return response;
  }

  /**
   * Signs in (registering first when asked, as the dashboard's form does) and keeps the CSRF token
   * for later requests. A refused registration is returned as is.
   */
  async signIn(email: string, password: string, register = false): Promise<Response> {
    if (register) {
      const registered = await this.request("POST", "/api/auth/register", { json: { email, password } });
      if (!registered.ok) return registered;
    }
    const response = await this.request("POST", "/api/auth/login", { json: { email, password } });
    if (response.ok) this.csrf = ((await response.clone().json()) as { csrf_token: string }).csrf_token;
    return response;
  }

  /** Opens a one-time dashboard link, then reads the session's CSRF token. */
  async openLink(url: string): Promise<Response> {
    const response = await this.request("GET", new URL(url).pathname + new URL(url).search);
    if (response.status === 303) {
      const me = await this.request("GET", "/api/auth/me");
      this.csrf = ((await me.json()) as { csrf_token: string }).csrf_token;
    }
    return response;
  }
}

/** Fills the daemon's bridge form at `pageUrl` (an auth session's `next.url`) as a browser would. */
export async function submitBridgeForm(pageUrl: string, fields: Record<string, string>): Promise<Response> {
  const page = await (await fetch(pageUrl)).text();
  const hidden = (name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(page)?.[1] ?? "";
  const url = new URL(pageUrl);
  return fetch(`${url.origin}${url.pathname}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: url.origin },
    body: new URLSearchParams({ token: hidden("token"), csrf: hidden("csrf"), ...fields }).toString(),
  });
}
