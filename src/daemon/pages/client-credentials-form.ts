import type { FastifyReply } from "fastify";
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
  return sendPage(
    reply,
    status,
    `Connect ${provider.display_name}`,
    `<h1>Connect ${escapeHtml(provider.display_name)}</h1>
<p>${escapeHtml(provider.display_name)} needs an OAuth app of your own. Create one in its developer settings${
      session.flow === "device_code" ? "" : " with this callback URL"
    }, then paste its credentials below. svc stores them encrypted and reuses them for later logins.</p>
${
  session.flow === "device_code"
    ? ""
    : `<p><label for="callback">Callback URL</label><input id="callback" type="text" readonly value="${escapeHtml(callback)}"></p>`
}
<p class="muted">Connection <strong>${escapeHtml(session.connection)}</strong>${
      provider.docs_url
        ? ` · <a href="${escapeHtml(provider.docs_url)}" rel="noreferrer noopener" target="_blank">how to create the app</a>`
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
