import type { FastifyReply } from "fastify";
import type { SetupStep } from "../../providers/app-setup.ts";
import type { Provider } from "../../providers/schema.ts";
import type { AuthSessionState } from "../services/auth-sessions.ts";
import { escapeHtml, sendPage } from "./html.ts";

/**
 * The bridge form for an OAuth client a provider does not publish: the person creates an OAuth
 * app at the provider with svc's callback URL, then pastes its id and secret here. Posts back to
 * itself and works without JavaScript.
 */
export function sendClientCredentialsForm(
  reply: FastifyReply,
  session: AuthSessionState,
  provider: Provider,
  error?: string,
  status = 200,
): FastifyReply {
  const action = `/api/auth/sessions/${encodeURIComponent(session.id)}/input`;
  const needsSecret = provider.oauth?.token_auth_method !== "none";
  const callback = session.oauth?.redirectUri ?? "";
  const steps = session.oauth?.setup ?? [];
  return sendPage(
    reply,
    status,
    `Connect ${provider.display_name}`,
    `<h1>Connect ${escapeHtml(provider.display_name)}</h1>
<p>${escapeHtml(provider.display_name)} needs an OAuth app of your own. svc stores its client ID and secret encrypted and reuses them for later logins.</p>
${
  steps.length > 0
    ? `<ol class="setup">${steps.map((step, index) => setupStep(step, index)).join("")}</ol>`
    : session.flow === "device_code"
      ? ""
      : `<p><label for="callback">Callback URL</label><input id="callback" type="text" readonly value="${escapeHtml(callback)}"></p>`
}
<p class="muted">Connection <strong>${escapeHtml(session.connection)}</strong>${
      provider.docs_url
        ? ` · <a href="${escapeHtml(provider.docs_url)}" rel="noreferrer noopener" target="_blank">${escapeHtml(provider.display_name)}'s documentation</a>`
        : ""
    }</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="${escapeHtml(action)}" autocomplete="off">
<input type="hidden" name="token" value="${escapeHtml(session.bridgeToken)}">
<input type="hidden" name="csrf" value="${escapeHtml(session.csrfToken)}">
<label for="client_id">Client ID</label>
<input id="client_id" name="client_id" type="text" required autofocus spellcheck="false" autocomplete="off">
<label for="client_secret">Client secret${needsSecret ? "" : " (if the app has one)"}</label>
<input id="client_secret" name="client_secret" type="password"${needsSecret ? " required" : ""} spellcheck="false" autocomplete="off">
<button type="submit">Save and continue</button>
</form>`,
  );
}

/** One numbered step; a value to paste elsewhere sits in a read-only field, ready to copy. */
function setupStep(step: SetupStep, index: number): string {
  const id = `setup-${index + 1}`;
  const value = step.copy
    ? `<input id="${id}" type="text" readonly value="${escapeHtml(step.copy)}" aria-label="${escapeHtml(step.text)}">`
    : "";
  return `<li><span>${escapeHtml(step.text)}</span>${value}</li>`;
}

/** After the client is saved: the way on to the provider's sign-in (a link: forms may not redirect off-site under the CSP). */
export function sendContinuePage(reply: FastifyReply, provider: Provider, url: string): FastifyReply {
  return sendPage(
    reply,
    200,
    `Continue to ${provider.display_name}`,
    `<h1>Client saved</h1>
<p>Now sign in to ${escapeHtml(provider.display_name)} and allow access.</p>
<p><a class="button" id="continue" href="${escapeHtml(url)}" rel="noreferrer">Continue to ${escapeHtml(provider.display_name)}</a></p>`,
  );
}
