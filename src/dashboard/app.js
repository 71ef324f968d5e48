// The svc dashboard: a small client-side router over the daemon's API. Every path below answers
// the same shell (src/daemon/routes/dashboard.ts); this module shows the page for the path.

import { ApiError, api, CONNECTIONS_CHANGED, onSignedOut, setCsrfToken } from "./api.js";
import { h, loading, toast } from "./dom.js";
import { agentsPage } from "./page-agents.js";
import { auditPage } from "./page-audit.js";
import { connectionsPage } from "./page-connections.js";
import { loginPage } from "./page-login.js";
import { providersPage } from "./page-providers.js";

/** @typedef {{principal_id: string, role: "admin" | "user", email: string | null, identity: string, csrf_token: string, expires_at: string}} BrowserSession */

const PAGES = {
  "/": connectionsPage,
  "/providers": providersPage,
  "/agents": agentsPage,
  "/audit": auditPage,
};

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const sidebar = /** @type {HTMLElement} */ (document.getElementById("sidebar"));

/** @type {BrowserSession | null} */
let session = null;
/** @type {Promise<Array<{name: string, display_name: string, auth_type: string, flow: string, source: string}>> | null} */
let providerList = null;
/** @type {AbortController | null} */
let current = null;
let firstRender = true;

/** A path on this daemon to go to after signing in; anything else (another site) becomes `/`. */
function safeNext(next) {
  return typeof next === "string" && /^\/(?![/\\])/.test(next) ? next : "/";
}

/** Goes to `path`: inside the app without a reload, or a full load for the daemon's other pages. */
export function navigate(path, { replace = false } = {}) {
  const url = new URL(path, location.origin);
  if (url.origin !== location.origin || !(url.pathname in PAGES || url.pathname === "/login")) {
    location.assign(url.href);
    return;
  }
  if (replace) history.replaceState(null, "", url.pathname + url.search);
  else history.pushState(null, "", url.pathname + url.search);
  void render();
}

function setSession(next) {
  session = next;
  setCsrfToken(next?.csrf_token ?? "");
  providerList = null;
}

async function loadSession() {
  try {
    return /** @type {BrowserSession} */ (await api("/api/auth/me", { quiet401: true }));
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null;
    throw error;
  }
}

function showAccount() {
  const name = session?.email ?? "Local owner";
  /** @type {HTMLElement} */ (document.getElementById("account-name")).textContent = name;
  /** @type {HTMLElement} */ (document.getElementById("account-name")).title = name;
  /** @type {HTMLElement} */ (document.getElementById("account-role")).textContent =
    session?.role === "admin" ? "Admin" : "User";
  /** @type {HTMLElement} */ (document.getElementById("account-avatar")).textContent = name
    .charAt(0)
    .toUpperCase();
}

function markNav(path) {
  for (const link of sidebar.querySelectorAll("a[data-route]")) {
    if (link.getAttribute("data-route") === path) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function errorView(error) {
  const message = error instanceof Error ? error.message : String(error);
  return h(
    "div",
    { class: "page" },
    h("div", { class: "page-header" }, h("h1", { tabindex: "-1" }, "Something went wrong")),
    h("p", { class: "notice", role: "alert" }, message),
  );
}

/** Shows a page, then moves focus to its heading (after navigation, not on the first load). */
function show(node, title) {
  main.replaceChildren(node);
  main.removeAttribute("aria-busy");
  document.title = `${title} · svc`;
  document.body.classList.remove("booting");
  if (!firstRender) /** @type {HTMLElement | null} */ (main.querySelector("h1"))?.focus();
  firstRender = false;
}

async function render() {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const { signal } = controller;
  const url = new URL(location.href);
  try {
    if (!session) setSession(await loadSession());
    if (signal.aborted) return;

    if (url.pathname === "/login") {
      const next = safeNext(url.searchParams.get("next"));
      if (session) return navigate(next, { replace: true });
      document.body.classList.add("signed-out");
      sidebar.hidden = true;
      const node = loginPage({
        url,
        signIn: (record) => {
          setSession(record);
          navigate(next, { replace: true });
        },
      });
      return show(node, "Sign in");
    }

    if (!session) {
      return navigate(`/login?next=${encodeURIComponent(url.pathname + url.search)}`, { replace: true });
    }
    document.body.classList.remove("signed-out");
    sidebar.hidden = false;
    showAccount();
    markNav(url.pathname);
    const page = PAGES[/** @type {keyof typeof PAGES} */ (url.pathname)];
    main.setAttribute("aria-busy", "true");
    if (!main.firstElementChild || firstRender) main.replaceChildren(loading("Loading…"));
    document.body.classList.remove("booting");
    const context = {
      session,
      url,
      signal,
      api: (path, options = {}) => api(path, { signal, ...options }),
      providers: () => {
        providerList ??= api("/api/providers").catch((error) => {
          providerList = null;
          throw error;
        });
        return providerList;
      },
      onConnectionsChanged: (handler) => window.addEventListener(CONNECTIONS_CHANGED, handler, { signal }),
      navigate,
    };
    const { node, title } = await page(context);
    if (signal.aborted) return;
    show(node, title);
  } catch (error) {
    if (signal.aborted) return;
    show(errorView(error), "Error");
  }
}

onSignedOut(() => {
  if (!session) return;
  setSession(null);
  const here = location.pathname + location.search;
  navigate(`/login?expired=1&next=${encodeURIComponent(here)}`, { replace: true });
});

document.getElementById("sign-out")?.addEventListener("click", async (event) => {
  const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
  button.disabled = true;
  try {
    await api("/api/logout", { method: "POST" });
    setSession(null);
    navigate("/login?signed_out=1");
  } catch (error) {
    if (session) toast(error instanceof Error ? error.message : String(error), { kind: "error" });
  } finally {
    button.disabled = false;
  }
});

// Links to the app's own pages change the page without a reload; others behave as links do.
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = /** @type {Element} */ (event.target).closest("a[href]");
  if (!(link instanceof HTMLAnchorElement) || link.target || link.hasAttribute("download")) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || !(url.pathname in PAGES || url.pathname === "/login")) return;
  event.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) navigate(url.pathname + url.search);
});

window.addEventListener("popstate", () => void render());

void render();
