import type { FastifyReply } from "fastify";
import type { Provider } from "../../providers/schema.ts";
import type { AuthSessionState } from "../services/auth-sessions.ts";
import { escapeHtml, sendPage } from "./html.ts";

/** Seconds between reloads of the device page while it waits (no JavaScript needed). */
const REFRESH_SECONDS = 5;

/** The device-code page: the code to enter, the link to enter it at, and when it stops working. */
export function sendDevicePage(
  reply: FastifyReply,
  session: AuthSessionState,
  provider: Provider,
): FastifyReply {
  const device = session.oauth!.device!;
  const link = device.verification_uri_complete ?? device.verification_uri;
  return sendPage(
    reply,
    200,
    `Connect ${provider.display_name}`,
    `<h1>Connect ${escapeHtml(provider.display_name)}</h1>
<p>Enter this code at <a href="${escapeHtml(device.verification_uri)}" rel="noreferrer" target="_blank">${escapeHtml(device.verification_uri)}</a>:</p>
<p class="code" id="user_code" aria-label="Your code">${escapeHtml(device.user_code)}</p>
<p><a class="button" href="${escapeHtml(link)}" rel="noreferrer" target="_blank">Open ${escapeHtml(provider.display_name)}</a></p>
<p class="muted">Connection <strong>${escapeHtml(session.connection)}</strong> · the code works until <time datetime="${device.expiresAt.toISOString()}">${escapeHtml(device.expiresAt.toUTCString())}</time>. This page updates itself; svc finishes the login as soon as you approve.</p>`,
    { refreshSeconds: REFRESH_SECONDS },
  );
}
