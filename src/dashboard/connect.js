// Connecting a provider from the dashboard: start a login session, send the person to the page
// that collects the credential (the daemon's key form, the provider's sign-in, or a device code),
// and follow the session with a long poll until it ends.

import { ApiError, api, connectionsChanged } from "./api.js";
import { h, icon, openDialog, toast, uid } from "./dom.js";

const FINAL = new Set(["completed", "failed", "expired", "cancelled"]);
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/**
 * @typedef {{name: string, display_name: string, auth_type: string, flow: string, source: string}} ProviderSummary
 * @typedef {{session_id: string, provider: string, connection: string, flow: string, status: string, revision: number,
 *   next?: {type: string, url: string}, waiting_for?: string, device?: {user_code: string, verification_uri: string,
 *   verification_uri_complete?: string, expires_at: string}, error?: {error: string, message: string}}} AuthSession
 */

/**
 * Connects `provider`. Without a connection name: `default` when the provider has no connection
 * yet, else the person names the new one first.
 * @param {ProviderSummary} provider
 * @param {string[]} existing the provider's connection names
 * @param {{connection?: string, force?: boolean}} [options]
 */
export async function connectProvider(provider, existing, options = {}) {
  let choice = options.connection ? { connection: options.connection, force: options.force ?? false } : null;
  if (!choice && existing.length === 0) choice = { connection: "default", force: false };
  if (!choice) choice = await askConnectionName(provider, existing);
  if (!choice) return;
  await runLogin(provider, choice);
}

/**
 * @param {ProviderSummary} provider
 * @param {string[]} existing
 * @returns {Promise<{connection: string, force: boolean} | null>}
 */
function askConnectionName(provider, existing) {
  return new Promise((resolve) => {
    let result = null;
    const nameId = uid("connection-name");
    const hintId = uid("connection-hint");
    const input = /** @type {HTMLInputElement} */ (
      h("input", {
        id: nameId,
        class: "input mono",
        name: "connection",
        required: true,
        spellcheck: "false",
        autocapitalize: "off",
        autocomplete: "off",
        "aria-describedby": hintId,
      })
    );
    const replace = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", name: "force" }));
    const replaceRow = h(
      "label",
      { class: "checkbox", hidden: true },
      replace,
      "Replace the existing connection of this name",
    );
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const cancel = h("button", { type: "button", class: "btn" }, "Cancel");
    const submit = h(
      "button",
      { type: "submit", class: "btn btn-primary", form: `${nameId}-form` },
      "Continue",
    );
    const form = h(
      "form",
      { id: `${nameId}-form`, class: "stack", novalidate: true },
      h(
        "p",
        null,
        `${provider.display_name} already has ${existing.length === 1 ? "a connection" : `${existing.length} connections`}: `,
        existing.join(", "),
        ". Name the new one, e.g. work or personal.",
      ),
      error,
      h(
        "div",
        { class: "field" },
        h("label", { for: nameId }, "Connection name"),
        input,
        h("p", { id: hintId, class: "hint" }, "Letters, digits, '.', '_' and '-'."),
      ),
      replaceRow,
    );
    const { dialog } = openDialog({
      title: `Connect ${provider.display_name}`,
      content: [form],
      actions: [cancel, submit],
      onClose: () => resolve(result),
    });
    input.addEventListener("input", () => {
      replaceRow.hidden = !existing.includes(input.value.trim());
      error.hidden = true;
      input.removeAttribute("aria-invalid");
    });
    cancel.addEventListener("click", () => dialog.close());
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const connection = input.value.trim();
      let problem = "";
      if (!NAME.test(connection))
        problem = "Use 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit.";
      else if (existing.includes(connection) && !replace.checked) {
        problem = `"${connection}" exists. Tick "Replace" to overwrite it, or pick another name.`;
      }
      if (problem) {
        error.textContent = problem;
        error.hidden = false;
        input.setAttribute("aria-invalid", "true");
        input.focus();
        return;
      }
      result = { connection, force: existing.includes(connection) && replace.checked };
      dialog.close();
    });
    input.focus();
  });
}

const STEP_TEXT = {
  api_key: (p) => [`Paste your ${p.display_name} API key in the tab that opened.`, "Open the key form"],
  client_credentials: (p) => [
    `${p.display_name} needs your OAuth app's client ID and secret first: enter them in the tab that opened.`,
    "Open the form",
  ],
  authorization: (p) => [
    `Sign in to ${p.display_name} in the tab that opened and allow access.`,
    "Open the sign-in page",
  ],
  device_code: (p) => [`Enter this code at ${p.display_name} to allow access.`, "Open the verification page"],
};

/**
 * Starts the login and shows it in a dialog until it ends. Closing the dialog leaves the login
 * running; a message says how it ended.
 * @param {ProviderSummary} provider
 * @param {{connection: string, force: boolean}} choice
 */
async function runLogin(provider, choice) {
  let open = true;
  let session = /** @type {AuthSession | null} */ (null);
  const statusText = h("strong", null, "Starting the login…");
  const statusDetail = h("span");
  const status = h(
    "div",
    { class: "connect-status", role: "status", "aria-live": "polite" },
    h("span", { class: "spinner status-icon", "aria-hidden": "true" }),
    h("span", { class: "status-text" }, statusText, statusDetail),
  );
  const step = h("div", { class: "stack" });
  const cancel = /** @type {HTMLButtonElement} */ (
    h("button", { type: "button", class: "btn btn-danger" }, "Cancel login")
  );
  const close = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "btn" }, "Close"));
  const { dialog } = openDialog({
    title: `Connect ${provider.display_name}`,
    content: [
      h(
        "p",
        null,
        "Connection ",
        h("code", null, choice.connection),
        choice.force ? " (replacing the stored one)" : "",
      ),
      status,
      step,
    ],
    actions: [cancel, close],
    onClose: () => {
      open = false;
    },
  });
  close.addEventListener("click", () => dialog.close());
  cancel.addEventListener("click", async () => {
    if (!session) return;
    cancel.disabled = true;
    try {
      await api(`/api/auth/sessions/${encodeURIComponent(session.session_id)}/cancel`, { method: "POST" });
    } catch (error) {
      cancel.disabled = false;
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
    }
  });
  close.focus();

  const finish = (ok, title, detail) => {
    status.classList.add(ok ? "ok" : "fail");
    status.firstElementChild?.replaceWith(icon(ok ? "checkCircle" : "alert", "status-icon"));
    statusText.textContent = title;
    statusDetail.textContent = detail;
    step.replaceChildren();
    cancel.hidden = true;
    close.textContent = "Done";
    close.classList.add("btn-primary");
    if (open) close.focus();
    else toast(ok ? title : `${title} ${detail}`, { kind: ok ? "ok" : "error" });
  };

  try {
    session = /** @type {AuthSession} */ (
      await api(`/api/auth/providers/${encodeURIComponent(provider.name)}/connect`, {
        method: "POST",
        body: { connection: choice.connection, force: choice.force },
      })
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    finish(false, "The login could not start.", message);
    return;
  }

  showStep(provider, session, statusText, statusDetail, step);
  // The page opens in a new tab; the dialog's link is there if a popup blocker stopped it.
  if (session.next && session.waiting_for !== "device_code") {
    window.open(session.next.url, "_blank", "noopener,noreferrer");
  }

  let failures = 0;
  while (!FINAL.has(session.status)) {
    try {
      const path = `/api/auth/sessions/${encodeURIComponent(session.session_id)}?after=${session.revision}&wait=25`;
      const next = /** @type {AuthSession} */ (await api(path));
      failures = 0;
      if (next.waiting_for !== session.waiting_for) showStep(provider, next, statusText, statusDetail, step);
      else if (next.status === "processing") statusText.textContent = "Saving the credential…";
      session = next;
    } catch (error) {
      if (error instanceof ApiError && [401, 403, 404].includes(error.status)) {
        finish(false, "The login could not be followed.", error.message);
        return;
      }
      failures += 1;
      if (failures >= 5) {
        finish(
          false,
          "Lost contact with the daemon.",
          error instanceof Error ? error.message : String(error),
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }

  const where = `connection “${session.connection}”`;
  if (session.status === "completed") {
    finish(true, `${provider.display_name} connected.`, `Stored encrypted as ${where}.`);
    connectionsChanged();
  } else if (session.status === "failed") {
    finish(false, `Connecting ${provider.display_name} failed.`, session.error?.message ?? "");
  } else if (session.status === "expired") {
    finish(
      false,
      "The login expired.",
      "It was not finished within its time. Start again when you are ready.",
    );
  } else {
    finish(false, "The login was cancelled.", "Nothing was stored.");
  }
}

/** What the person does now, for the step the session waits for. */
function showStep(provider, session, statusText, statusDetail, step) {
  const waiting = session.waiting_for;
  const text = waiting ? STEP_TEXT[/** @type {keyof typeof STEP_TEXT} */ (waiting)] : undefined;
  if (!text) {
    statusText.textContent = session.status === "processing" ? "Saving the credential…" : "Working…";
    statusDetail.textContent = "";
    step.replaceChildren();
    return;
  }
  const [instruction, linkLabel] = text(provider);
  statusText.textContent = "Waiting for you…";
  statusDetail.textContent = instruction;
  const device = waiting === "device_code" ? session.device : undefined;
  const href = device ? (device.verification_uri_complete ?? device.verification_uri) : session.next?.url;
  const link = href
    ? h(
        "a",
        { class: "btn", href, target: "_blank", rel: "noopener noreferrer" },
        icon("external"),
        linkLabel,
        h("span", { class: "sr-only" }, " (opens in a new tab)"),
      )
    : null;
  if (device) {
    const code = h("p", { class: "user-code" }, device.user_code);
    const copy = h("button", { type: "button", class: "btn" }, icon("copy"), "Copy code");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(device.user_code);
        toast("Code copied.", { kind: "ok" });
      } catch {
        toast("Could not copy; select the code and copy it.", { kind: "error" });
      }
    });
    step.replaceChildren(
      code,
      h("div", { class: "page-actions" }, link, copy),
      h("p", { class: "hint" }, "At ", h("span", { class: "mono" }, device.verification_uri)),
    );
  } else {
    step.replaceChildren(
      h(
        "div",
        { class: "page-actions" },
        link,
        h("span", { class: "hint" }, "Did no tab open? Use this link."),
      ),
    );
  }
}
