import type { FastifyReply } from "fastify";

/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(value: string): string {
  return value
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/**
 * Pages carry no external assets, cannot be framed, leak no URL to other sites (it holds a token),
 * and are never cached. `same-origin`, not `no-referrer`: under `no-referrer` Chromium sends
 * `Origin: null` on a form post, which the same-origin check must refuse.
 */
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};

const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: Canvas; }
  main { width: min(28rem, 92vw); padding: 2rem; border: 1px solid color-mix(in srgb, CanvasText 15%, transparent); border-radius: 12px; }
  h1 { font-size: 1.25rem; margin: 0 0 .5rem; }
  p { line-height: 1.45; margin: .5rem 0; }
  label { display: block; font-weight: 600; margin: 1rem 0 .35rem; }
  input[type=password], input[type=text] { width: 100%; box-sizing: border-box; padding: .6rem; font: inherit; border-radius: 6px; border: 1px solid color-mix(in srgb, CanvasText 30%, transparent); }
  button { margin-top: 1rem; padding: .6rem 1.2rem; font: inherit; border-radius: 6px; border: 0; background: #2563eb; color: white; cursor: pointer; }
  .error { color: #b91c1c; font-weight: 600; }
  .ok { color: #15803d; }
  .muted { opacity: .7; font-size: .9rem; }
  .code { font: 700 2rem/1.2 ui-monospace, monospace; letter-spacing: .15em; text-align: center; padding: .75rem; border-radius: 8px; background: color-mix(in srgb, CanvasText 6%, transparent); user-select: all; }
  a.button { display: inline-block; margin-top: .5rem; padding: .6rem 1.2rem; border-radius: 6px; background: #2563eb; color: white; text-decoration: none; }
  a.button:focus-visible, button:focus-visible { outline: 3px solid #93c5fd; outline-offset: 2px; }
`;

/** Sends a complete, self-contained HTML page; `refreshSeconds` reloads it (a status page without JavaScript). */
export function sendPage(
  reply: FastifyReply,
  status: number,
  title: string,
  body: string,
  options: { refreshSeconds?: number } = {},
): FastifyReply {
  const refresh = options.refreshSeconds
    ? `\n<meta http-equiv="refresh" content="${options.refreshSeconds}">`
    : "";
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">${refresh}
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)} · svc</title>
<style>${STYLE}</style>
</head>
<body><main>
${body}
</main></body>
</html>
`;
  return reply.code(status).headers(PAGE_HEADERS).send(html);
}

/** A page that ends a browser step: success, or what went wrong and what to do. */
export function sendOutcomePage(
  reply: FastifyReply,
  status: number,
  outcome: { ok: boolean; title: string; message: string },
): FastifyReply {
  return sendPage(
    reply,
    status,
    outcome.title,
    `<h1 class="${outcome.ok ? "ok" : "error"}">${escapeHtml(outcome.title)}</h1>
<p>${escapeHtml(outcome.message)}</p>
<p class="muted">You can close this tab.</p>`,
  );
}
