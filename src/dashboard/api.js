// The daemon's JSON API as the signed-in browser: the session cookie goes along (same origin
// only), and every request that changes something carries the session's CSRF token.

/** A failed request: `error` is the daemon's error class, `message` says what to do. */
export class ApiError extends Error {
  /** @param {number} status @param {string} error @param {string} message */
  constructor(status, error, message) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

let csrfToken = "";
/** @type {(error: ApiError) => void} */
let signedOutHandler = () => {};

/** The CSRF token of the current session (from `GET /api/auth/me` or the sign-in answer). */
export function setCsrfToken(token) {
  csrfToken = token ?? "";
}

/** Called when the daemon answers 401: the session ended (signed out elsewhere, expired). */
export function onSignedOut(handler) {
  signedOutHandler = handler;
}

/**
 * @param {string} path
 * @param {{method?: string, body?: unknown, signal?: AbortSignal, quiet401?: boolean}} [options]
 *   `quiet401`: a 401 is an answer (e.g. "not signed in yet"), not a session that ended.
 */
export async function api(path, { method = "GET", body, signal, quiet401 = false } = {}) {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" };
  /** @type {RequestInit} */
  // The page's policy is no-referrer; "same-origin" here makes every browser send the real
  // Origin on a POST (the daemon refuses `Origin: null`), and still nothing leaves the daemon.
  const init = {
    method,
    headers,
    credentials: "same-origin",
    cache: "no-store",
    referrerPolicy: "same-origin",
    signal,
  };
  if (method !== "GET") {
    headers["x-csrf-token"] = csrfToken;
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(
      0,
      "DaemonUnavailableError",
      "The svc daemon is not answering. Start it with `svc daemon start`, then reload this page.",
    );
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new ApiError(
      response.status,
      data?.error ?? "UnexpectedError",
      data?.message ?? `The daemon answered ${response.status}.`,
    );
    if (response.status === 401 && !quiet401) signedOutHandler(error);
    throw error;
  }
  return data;
}

/** `/api/connections/{provider}/{connection}/...` with both names escaped. */
export function connectionPath(provider, connection, action) {
  return `/api/connections/${encodeURIComponent(provider)}/${encodeURIComponent(connection)}/${action}`;
}

export const CONNECTIONS_CHANGED = "svc:connections-changed";

/** Tells the open page that a connection appeared, changed or went away. */
export function connectionsChanged() {
  window.dispatchEvent(new CustomEvent(CONNECTIONS_CHANGED));
}
