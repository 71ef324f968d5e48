import type { FastifyReply } from "fastify";
import type { Provider } from "../../providers/schema.ts";
import type { AuthSessionState } from "../services/auth-sessions.ts";
import { escapeHtml, sendPage } from "./html.ts";

/** An AWS key pair: several values, pasted as JSON or KEY=value lines into one field. */
const AWS_FIELD = `<label for="api_key">AWS credentials</label>
<textarea id="api_key" name="api_key" rows="5" required autofocus spellcheck="false" autocomplete="off" aria-describedby="hint" placeholder="AWS_ACCESS_KEY_ID=AKIA...&#10;AWS_SECRET_ACCESS_KEY=...&#10;AWS_REGION=us-east-1"></textarea>
<p id="hint" class="muted">KEY=value lines (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optionally AWS_SESSION_TOKEN and AWS_REGION) or one JSON object. svc signs each request itself: programs you run never see the secret.</p>`;

function keyField(hint: string | undefined): string {
  return `<label for="api_key">API key</label>
<input id="api_key" name="api_key" type="password" required autofocus spellcheck="false" autocomplete="off"${
    hint ? ` aria-describedby="hint"` : ""
  }>
${hint ? `<p id="hint" class="muted">Format: ${escapeHtml(hint)}</p>` : ""}`;
}

/** The bridge form for an API key: posts back to itself, works without JavaScript. */
export function sendApiKeyForm(
  reply: FastifyReply,
  session: AuthSessionState,
  provider: Provider,
  error?: string,
  status = 200,
): FastifyReply {
  const hint = provider.api_key?.key_pattern_hint;
  const aws = provider.auth_type === "aws_sigv4";
  const action = `/api/auth/sessions/${encodeURIComponent(session.id)}/input`;
  return sendPage(
    reply,
    status,
    `Connect ${provider.display_name}`,
    `<h1>Connect ${escapeHtml(provider.display_name)}</h1>
<p>Paste your ${escapeHtml(provider.display_name)} ${aws ? "access key" : "API key"}. svc stores it encrypted and injects it into requests for you; programs you run never see it.</p>
<p class="muted">Connection <strong>${escapeHtml(session.connection)}</strong>${
      provider.docs_url
        ? ` · <a href="${escapeHtml(provider.docs_url)}" rel="noreferrer noopener" target="_blank">where to find the key</a>`
        : ""
    }</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="${escapeHtml(action)}" autocomplete="off">
<input type="hidden" name="token" value="${escapeHtml(session.bridgeToken)}">
<input type="hidden" name="csrf" value="${escapeHtml(session.csrfToken)}">
${aws ? AWS_FIELD : keyField(hint)}
<button type="submit">Save key</button>
</form>`,
  );
}
