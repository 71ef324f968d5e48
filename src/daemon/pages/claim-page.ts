import type { FastifyReply } from "fastify";
import type { BrowserSession } from "../services/browser-sessions.ts";
import type { Principal } from "../services/principals.ts";
import { escapeHtml, sendPage } from "./html.ts";

export interface ClaimView {
  token: string;
  handle: string;
  did: string;
  expiresAt: Date;
}

/** `did:key:z6Mk…` is long; its start and end are what a person compares with `svc whoami`. */
function shortDid(did: string): string {
  return did.length > 32 ? `${did.slice(0, 20)}…${did.slice(-8)}` : did;
}

function identityBlock(claim: ClaimView): string {
  return `<p>An svc agent identity asks to join your account:</p>
<p class="code" style="font-size:1.1rem;letter-spacing:0">${escapeHtml(claim.handle)}</p>
<p class="muted">Key <code title="${escapeHtml(claim.did)}">${escapeHtml(shortDid(claim.did))}</code>. Compare it with <code>svc whoami</code> on the machine that asked.</p>`;
}

/** The claim page: the identity asking, then `next` (how to go on). */
function sendClaimPage(reply: FastifyReply, claim: ClaimView, next: string): FastifyReply {
  return sendPage(
    reply,
    200,
    "Claim an identity",
    `<h1>Claim an identity</h1>\n${identityBlock(claim)}\n${next}`,
  );
}

/** Signed out: where to sign in (or create an account) and come back. */
export function sendClaimSignIn(reply: FastifyReply, claim: ClaimView): FastifyReply {
  const back = `/api/claim/${encodeURIComponent(claim.token)}`;
  return sendClaimPage(
    reply,
    claim,
    `<p>Sign in to the svc dashboard with the account that should own it, then confirm.</p>
<a class="button" href="/login?next=${encodeURIComponent(back)}">Sign in to continue</a>`,
  );
}

/** Signed in: one button attaches the identity to this account. */
export function sendClaimConfirm(
  reply: FastifyReply,
  claim: ClaimView,
  session: BrowserSession,
  principal: Principal,
): FastifyReply {
  const action = `/api/claim/${encodeURIComponent(claim.token)}/confirm`;
  const account = principal.email ?? "this daemon's owner";
  return sendClaimPage(
    reply,
    claim,
    `<p>Confirm only if you just ran svc yourself. The identity will act with the connections of <strong>${escapeHtml(account)}</strong>.</p>
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(session.csrfToken)}">
<button type="submit">Attach to my account</button>
</form>`,
  );
}
