// Sign in, or create an account. The first account of a fresh daemon is its admin; the local owner
// usually skips this page altogether with the one-time link from `svc dashboard`.

import { ApiError, api } from "./api.js";
import { h, uid } from "./dom.js";

const MODES = {
  signin: {
    tab: "Sign in",
    heading: "Sign in to svc",
    lede: "Manage the credentials your tools and agents use.",
    submit: "Sign in",
    busy: "Signing in…",
    path: "/api/auth/login",
    autocomplete: "current-password",
  },
  register: {
    tab: "Create account",
    heading: "Create your account",
    lede: "Your own vault: your connections and your audit log.",
    submit: "Create account",
    busy: "Creating account…",
    path: "/api/auth/register",
    autocomplete: "new-password",
  },
};

/**
 * @param {{url: URL, signIn: (session: import("./app.js").BrowserSession) => void}} options
 * @returns {HTMLElement}
 */
export function loginPage({ url, signIn }) {
  /** @type {keyof typeof MODES} */
  let mode = url.searchParams.get("mode") === "register" ? "register" : "signin";

  const emailId = uid("email");
  const passwordId = uid("password");
  const hintId = uid("password-hint");
  const panelId = uid("auth-panel");

  const heading = h("h1", { tabindex: "-1" });
  const lede = h("p", { class: "page-lede" });
  const email = /** @type {HTMLInputElement} */ (
    h("input", {
      id: emailId,
      class: "input",
      type: "email",
      name: "email",
      autocomplete: "username",
      required: true,
      spellcheck: "false",
      autocapitalize: "off",
    })
  );
  const password = /** @type {HTMLInputElement} */ (
    h("input", { id: passwordId, class: "input", type: "password", name: "password", required: true })
  );
  const hint = h("p", { id: hintId, class: "hint" }, "At least 10 characters.");
  const error = h("p", { class: "form-error", role: "alert", hidden: true });
  const submit = /** @type {HTMLButtonElement} */ (h("button", { type: "submit", class: "btn btn-primary" }));

  const notices = {
    signed_out: "You have signed out.",
    expired: "Your session ended. Sign in again to continue.",
  };
  const noticeKey = Object.keys(notices).find((key) => url.searchParams.has(key));
  const notice = noticeKey
    ? h("p", { class: "form-note", role: "status" }, notices[/** @type {keyof typeof notices} */ (noticeKey)])
    : null;

  const tabs = Object.entries(MODES).map(([key, value]) =>
    h(
      "button",
      {
        type: "button",
        role: "tab",
        class: "tab",
        id: `tab-${key}`,
        "aria-controls": panelId,
        onclick: () => setMode(/** @type {keyof typeof MODES} */ (key), false),
      },
      value.tab,
    ),
  );
  const tablist = h(
    "div",
    { class: "tabs", role: "tablist", "aria-label": "Sign in or create an account" },
    tabs,
  );
  // Arrow keys move between the two tabs (the WAI-ARIA tabs pattern).
  tablist.addEventListener("keydown", (event) => {
    if (!["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) return;
    event.preventDefault();
    const next = mode === "signin" ? "register" : "signin";
    const target = event.key === "Home" ? "signin" : event.key === "End" ? "register" : next;
    setMode(target, true);
  });

  const form = h(
    "form",
    { class: "auth-form", id: panelId, role: "tabpanel", novalidate: true },
    notice,
    error,
    h("div", { class: "field" }, h("label", { for: emailId }, "Email"), email),
    h("div", { class: "field" }, h("label", { for: passwordId }, "Password"), password, hint),
    submit,
  );

  function setMode(next, focusTab) {
    mode = next;
    const config = MODES[mode];
    heading.textContent = config.heading;
    lede.textContent = config.lede;
    submit.textContent = config.submit;
    password.autocomplete = /** @type {AutoFill} */ (config.autocomplete);
    hint.hidden = mode !== "register";
    if (mode === "register") password.setAttribute("aria-describedby", hintId);
    else password.removeAttribute("aria-describedby");
    form.setAttribute("aria-labelledby", `tab-${mode}`);
    for (const tab of tabs) {
      const selected = tab.id === `tab-${mode}`;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      if (selected && focusTab) tab.focus();
    }
    error.hidden = true;
    password.removeAttribute("aria-invalid");
    email.removeAttribute("aria-invalid");
    const search = new URLSearchParams(location.search);
    if (mode === "register") search.set("mode", "register");
    else search.delete("mode");
    const query = search.toString();
    history.replaceState(null, "", `/login${query ? `?${query}` : ""}`);
  }

  function fail(message, field) {
    error.textContent = message;
    error.hidden = false;
    for (const input of [email, password]) {
      if (input === field) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    }
    field?.focus();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!email.value.trim() || !email.validity.valid) return fail("Enter your email address.", email);
    if (!password.value) return fail("Enter your password.", password);
    if (mode === "register" && password.value.length < 10) {
      return fail("Use a password of at least 10 characters.", password);
    }
    const config = MODES[mode];
    submit.disabled = true;
    submit.textContent = config.busy;
    try {
      const body = { email: email.value.trim(), password: password.value };
      // Registering never signs in (its answer is the same for a taken email): sign in next.
      if (mode === "register") await api(config.path, { method: "POST", body });
      const record = await api("/api/auth/login", { method: "POST", body, quiet401: true });
      password.value = "";
      signIn(record);
    } catch (raw) {
      const message =
        raw instanceof ApiError && raw.status === 401
          ? mode === "register"
            ? "This email already has an account: sign in with its password."
            : "That email and password do not match an account."
          : raw instanceof Error
            ? raw.message
            : String(raw);
      fail(message, raw instanceof ApiError && raw.status === 401 ? password : undefined);
    } finally {
      submit.disabled = false;
      submit.textContent = MODES[mode].submit;
    }
  });

  setMode(mode, false);

  return h(
    "div",
    { class: "auth" },
    h(
      "section",
      { class: "card auth-card", "aria-labelledby": `${panelId}-heading` },
      h(
        "div",
        { class: "auth-brand" },
        h("img", { src: "/assets/logo.svg", alt: "", width: "32", height: "32" }),
        h("span", { class: "brand-name" }, "svc"),
      ),
      Object.assign(heading, { id: `${panelId}-heading` }),
      lede,
      tablist,
      form,
      h(
        "p",
        { class: "auth-foot" },
        "On this machine? Run ",
        h("code", null, "svc dashboard"),
        " in a terminal: it opens the dashboard signed in, no password needed.",
      ),
    ),
  );
}
