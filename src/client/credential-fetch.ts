/**
 * The library's `fetch`: the caller's request plus the credential that belongs on its URL, sent
 * with a transport `fetch` (Node's own by default). When a credential was added, redirects are
 * followed here one hop at a time and each hop is decided afresh, so a credential never travels
 * to a URL it does not belong to, whatever header carries it (Node's fetch drops only
 * `Authorization` on a cross-origin redirect; an `x-api-key` would go along).
 */

export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * The headers to add for a request (`null` removes one); empty when no credential belongs there.
 * The request is there for signatures, which cover its method, headers and body.
 */
export type CredentialHeaders = (url: URL, request: Request) => Promise<Record<string, string | null>>;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** The fetch standard's redirect limit. */
const MAX_REDIRECTS = 20;
/** Dropped when a redirect turns the request into a GET without a body (fetch standard). */
const BODY_HEADERS = [
  "content-encoding",
  "content-language",
  "content-location",
  "content-type",
  "content-length",
];
/** Dropped when a redirect leaves the origin (fetch standard, and what Node's fetch does). */
const CROSS_ORIGIN_HEADERS = ["authorization", "proxy-authorization", "cookie"];

/**
 * The body to send again after a 307 or 308: a value that can be read twice. Undefined when the
 * body is a stream (or another Request's body), which cannot be replayed; null when there is none.
 */
function replayableBody(
  input: string | URL | Request,
  init: RequestInit | undefined,
): BodyInit | null | undefined {
  const body = init?.body;
  if (body === undefined || body === null)
    return input instanceof Request && input.body !== null ? undefined : null;
  if (
    typeof body === "string" ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof Blob ||
    body instanceof FormData ||
    body instanceof URLSearchParams
  ) {
    return body;
  }
  return undefined;
}

/** The request for the next hop of a redirect, or undefined when it cannot be followed (a streamed body). */
function redirected(request: Request, status: number, target: URL, body: BodyInit | null | undefined) {
  if (target.protocol !== "https:" && target.protocol !== "http:") {
    throw new TypeError(`fetch failed: redirect to a URL that is not http(s): ${target.protocol}`);
  }
  const headers = new Headers(request.headers);
  let method = request.method;
  let nextBody = request.body === null ? null : body;
  if (
    (status === 303 && method !== "GET" && method !== "HEAD") ||
    ((status === 301 || status === 302) && method === "POST")
  ) {
    method = "GET";
    nextBody = null;
    for (const name of BODY_HEADERS) headers.delete(name);
  }
  if (nextBody === undefined) return undefined;
  if (target.origin !== new URL(request.url).origin)
    for (const name of CROSS_ORIGIN_HEADERS) headers.delete(name);
  return new Request(target, { method, headers, body: nextBody, signal: request.signal, redirect: "follow" });
}

/**
 * A `fetch` that adds `headersFor(url)` to each request. Requests that get no credential go to the
 * transport as they are (its own redirect handling included); a body is streamed, never buffered.
 * A 307 or 308 answer to a credentialed request whose body was a stream is returned, not followed.
 */
export function fetchWithCredentials(headersFor: CredentialHeaders, transport: FetchFunction): FetchFunction {
  return async (input, init) => {
    // Node's fetch takes an undici `dispatcher` in init, which a Request does not keep.
    const dispatcher = (init as { dispatcher?: unknown } | undefined)?.dispatcher;
    const extra = dispatcher === undefined ? undefined : ({ dispatcher } as RequestInit);
    const body = replayableBody(input, init);
    let request = new Request(input, init);
    for (let hop = 0; ; hop++) {
      const url = new URL(request.url);
      const credential = await headersFor(url, request);
      if (Object.keys(credential).length === 0) return transport(request, extra);
      const follow = request.redirect === "follow";
      const headers = new Headers(request.headers);
      for (const [name, value] of Object.entries(credential)) {
        if (value === null) headers.delete(name);
        else headers.set(name, value);
      }
      const response = await transport(
        new Request(request, { headers, redirect: follow ? "manual" : request.redirect }),
        extra,
      );
      const location =
        follow && REDIRECT_STATUSES.has(response.status) ? response.headers.get("location") : null;
      if (location === null) return response;
      const next = redirected(request, response.status, new URL(location, url), body);
      if (!next) return response;
      await response.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new TypeError(`fetch failed: more than ${MAX_REDIRECTS} redirects`);
      request = next;
    }
  };
}
