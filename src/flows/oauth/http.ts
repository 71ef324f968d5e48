/**
 * The one place the daemon talks to authorization servers: form posts and metadata reads with a
 * timeout, RFC 6749 client authentication, and error bodies turned into `OAuthProtocolError`.
 * Response bodies may hold tokens, so no message here ever quotes one.
 */
import { EndpointUnreachableError } from "../../core/errors.ts";
import type { TokenAuthMethod } from "../../providers/schema.ts";

/** How the daemon identifies itself to one authorization server. */
export interface OAuthClient {
  client_id: string;
  client_secret?: string;
  auth_method: TokenAuthMethod;
}

/** How long one request to an authorization server may take. */
export const OAUTH_HTTP_TIMEOUT_MS = 15_000;

/** An `{error, error_description}` answer (RFC 6749 §5.2, RFC 8628 §3.5, RFC 7591 §3.2.2). */
export class OAuthProtocolError extends Error {
  readonly error: string;
  readonly description: string | undefined;
  readonly status: number;

  constructor(error: string, description: string | undefined, status: number) {
    super(description ? `${error}: ${description}` : error);
    this.name = "OAuthProtocolError";
    this.error = error;
    this.description = description;
    this.status = status;
  }
}

/** RFC 6749 §2.3.1: id and secret are form-encoded before they are joined for Basic. */
function basicCredentials(client: OAuthClient): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, "+");
  const pair = `${encode(client.client_id)}:${encode(client.client_secret ?? "")}`;
  return `Basic ${Buffer.from(pair).toString("base64")}`;
}

/** Adds the client's authentication to a form request, as its `auth_method` says. */
function authenticate(client: OAuthClient, form: URLSearchParams, headers: Record<string, string>): void {
  if (client.auth_method === "client_secret_basic") {
    headers.authorization = basicCredentials(client);
    return;
  }
  form.set("client_id", client.client_id);
  if (client.auth_method === "client_secret_post" && client.client_secret) {
    form.set("client_secret", client.client_secret);
  }
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, {
      redirect: "error",
      ...init,
      signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
    });
  } catch (error) {
    const reason =
      error instanceof Error && error.name === "TimeoutError"
        ? `no answer within ${OAUTH_HTTP_TIMEOUT_MS / 1000} s`
        : error instanceof Error && error.cause instanceof Error
          ? error.cause.message
          : String(error instanceof Error ? error.message : error);
    throw new EndpointUnreachableError(`${new URL(url).origin} could not be reached (${reason})`, {
      cause: error,
    });
  }
}

/** JSON, or a form-encoded body (some token endpoints answer so); anything else is not an object. */
async function readBody(response: Response): Promise<Record<string, unknown> | undefined> {
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("application/x-www-form-urlencoded")) {
    return Object.fromEntries(new URLSearchParams(text));
  }
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function asError(body: Record<string, unknown> | undefined, status: number): OAuthProtocolError | undefined {
  if (typeof body?.error !== "string") return undefined;
  const description = typeof body.error_description === "string" ? body.error_description : undefined;
  return new OAuthProtocolError(body.error, description?.slice(0, 500), status);
}

/**
 * POSTs a form (token, device authorization, revocation). Some servers answer errors with 200, so
 * an `error` member always wins over the status code.
 */
export async function postForm(
  url: string,
  params: Record<string, string | undefined>,
  client?: OAuthClient,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) form.set(key, value);
  const headers: Record<string, string> = {
    accept: "application/json",
    "content-type": "application/x-www-form-urlencoded",
  };
  if (client) authenticate(client, form, headers);
  const response = await send(url, { method: "POST", headers, body: form.toString() });
  const body = await readBody(response);
  const error = asError(body, response.status);
  if (error) throw error;
  if (!response.ok) {
    throw new OAuthProtocolError(
      "server_error",
      `${new URL(url).origin} answered HTTP ${response.status}`,
      response.status,
    );
  }
  return { status: response.status, body: body ?? {} };
}

/** POSTs JSON (RFC 7591 registration). */
export async function postJson(url: string, payload: unknown): Promise<Record<string, unknown>> {
  const response = await send(url, {
    method: "POST",
    headers: { accept: "application/json", "content-type": "application/json" },
    body: JSON.stringify(payload),
  });
  const body = await readBody(response);
  const error = asError(body, response.status);
  if (error) throw error;
  if (!response.ok || !body) {
    throw new OAuthProtocolError(
      "server_error",
      `${new URL(url).origin} answered HTTP ${response.status}`,
      response.status,
    );
  }
  return body;
}

/** GETs a JSON document; undefined when it is not there (404 and friends), errors when unreachable. */
export async function getJson(url: string): Promise<Record<string, unknown> | undefined> {
  const response = await send(url, { headers: { accept: "application/json" }, redirect: "follow" });
  if (!response.ok) {
    await response.body?.cancel();
    return undefined;
  }
  return readBody(response);
}
