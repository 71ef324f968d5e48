import type { FastifyReply } from "fastify";
import type { Principal } from "../services/principals.ts";
import { escapeHtml, sendPage } from "./html.ts";

export interface LinkConfirmView {
  token: string;
  next: string | undefined;
  /** Whom the link signs the browser in as. */
  target: Principal;
  /** Whom the browser is signed in as now, if anyone. */
  current: Principal | undefined;
  csrfToken: string;
}

function accountName(principal: Principal): string {
  return principal.email ?? "this daemon's owner";
}

/**
 * Asked before a one-time link signs a browser in that may not have asked for it: a link opened
 * from another site, or in a browser already signed in as someone else. Continuing is a
 * same-origin POST with a CSRF token, which no other site can send.
 */
export function sendLinkConfirmPage(reply: FastifyReply, view: LinkConfirmView): FastifyReply {
  const action = `/auth/link/${encodeURIComponent(view.token)}`;
  const now = view.current
    ? `You are signed in as <strong>${escapeHtml(accountName(view.current))}</strong> (${escapeHtml(view.current.role)}).`
    : "You are not signed in.";
  const next = view.next ? `\n<input type="hidden" name="next" value="${escapeHtml(view.next)}">` : "";
  return sendPage(
    reply,
    200,
    "Sign in with this link?",
    `<h1>Sign in with this link?</h1>
<p>${now}</p>
<p>This one-time link signs this browser in as <strong>${escapeHtml(accountName(view.target))}</strong> (${escapeHtml(view.target.role)})${view.current ? ", and signs you out of your current session" : ""}.</p>
<p class="muted">Continue only if you opened it yourself, with <code>svc dashboard</code>. A link someone else sent you would put you in their account.</p>
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(view.csrfToken)}">${next}
<button type="submit">Continue as ${escapeHtml(accountName(view.target))}</button>
</form>`,
  );
}
