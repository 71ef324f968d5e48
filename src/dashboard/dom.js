// DOM helpers: elements are built node by node, text as text nodes (no HTML strings), so nothing the daemon
// returns can become markup.

/**
 * Creates an element. `props`: attributes, plus `class`, `text`, and `on<event>` listeners.
 * `false`, `null` and `undefined` leave an attribute out; `true` sets it empty.
 * @param {string} tag
 * @param {Record<string, unknown> | null} [props]
 * @param {...unknown} children strings, nodes, arrays of them, or nothing
 * @returns {HTMLElement}
 */
export function h(tag, props, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") element.className = String(value);
    else if (key === "text") element.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  append(element, children);
  return element;
}

/** @param {Element} parent @param {unknown[]} children */
function append(parent, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.append(child);
    else parent.append(document.createTextNode(String(child)));
  }
}

const ICONS = {
  search: ["M21 21l-4.3-4.3", "M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14z"],
  plug: ["M9 17H7A5 5 0 0 1 7 7h2", "M15 7h2a5 5 0 1 1 0 10h-2", "M8 12h8"],
  grid: ["M4 4h6v6H4z", "M14 4h6v6h-6z", "M4 14h6v6H4z", "M14 14h6v6h-6z"],
  list: ["M9 6h11", "M9 12h11", "M9 18h11", "M4 6h.01", "M4 12h.01", "M4 18h.01"],
  check: ["M20 6 9 17l-5-5"],
  checkCircle: ["M22 11.1V12a10 10 0 1 1-5.9-9.1", "M22 4 12 14l-3-3"],
  alert: [
    "M12 9v4",
    "M12 17h.01",
    "M10.3 3.9 1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z",
  ],
  x: ["M18 6 6 18", "M6 6l12 12"],
  external: ["M15 3h6v6", "M10 14 21 3", "M18 13v6a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2V8a2 2 0 0 1 2-2h6"],
  plus: ["M12 5v14", "M5 12h14"],
  star: ["M12 2l3.1 6.3 6.9 1-5 4.9 1.2 6.8L12 17.8 5.8 21l1.2-6.8-5-4.9 6.9-1z"],
  logout: ["M9 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h4", "m16 17 5-5-5-5", "M21 12H9"],
  copy: ["M8 8h12v12H8z", "M16 8V4H4v12h4"],
  refresh: ["M21 12a9 9 0 1 1-2.6-6.4L21 8", "M21 3v5h-5"],
};

/**
 * An inline stroke icon, hidden from screen readers (the text next to it names the action).
 * @param {keyof typeof ICONS} name
 * @param {string} [extraClass]
 */
export function icon(name, extraClass = "") {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", `icon ${extraClass}`.trim());
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  for (const d of ICONS[name]) {
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

/** Text that only screen readers read (e.g. which connection a "Log out" button is for). */
export function srOnly(text) {
  return h("span", { class: "sr-only" }, text);
}

let nextId = 0;
/** A document-unique id for aria-labelledby and friends. */
export function uid(prefix) {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const UNITS = /** @type {const} */ ([
  ["year", 365 * 24 * 3600],
  ["month", 30 * 24 * 3600],
  ["week", 7 * 24 * 3600],
  ["day", 24 * 3600],
  ["hour", 3600],
  ["minute", 60],
]);

/** "in 3 hours", "2 days ago", "now". */
export function relativeTime(iso, now = Date.now()) {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
  }
  return Math.abs(seconds) < 45
    ? relative.format(0, "second")
    : relative.format(Math.round(seconds), "second");
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** A `<time>` showing the local date and time, with the exact ISO value as its tooltip. */
export function timeElement(iso, words = dateTime.format(new Date(iso))) {
  return h("time", { datetime: iso, title: iso }, words);
}

/** The letter tile standing in for a provider logo (no external images). */
export function providerAvatar(name, label) {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  const letter =
    (label || name)
      .replace(/[^A-Za-z0-9]/g, "")
      .charAt(0)
      .toUpperCase() || "?";
  return h("span", { class: `provider-avatar hue-${hash % 8}`, "aria-hidden": "true" }, letter);
}

/**
 * Shows a short message in the bottom corner; screen readers hear it (the region is aria-live).
 * @param {string} message
 * @param {{kind?: "info" | "ok" | "error"}} [options]
 */
export function toast(message, { kind = "info" } = {}) {
  const region = document.getElementById("toasts");
  if (!region) return;
  const close = h(
    "button",
    { type: "button", class: "btn btn-ghost btn-sm", "aria-label": "Dismiss" },
    icon("x"),
  );
  const item = h(
    "div",
    { class: `toast toast-${kind}`, role: kind === "error" ? "alert" : null },
    icon(kind === "error" ? "alert" : kind === "ok" ? "checkCircle" : "check"),
    h("p", null, message),
    close,
  );
  close.addEventListener("click", () => item.remove());
  region.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 12_000 : 6_000);
}

/**
 * Opens a modal `<dialog>`: focus moves into it, Escape closes it, the page behind is inert, and
 * focus returns to where it was when it closes.
 * @param {{title: string, content: unknown[], actions: unknown[], onClose?: () => void, label?: string}} options
 */
export function openDialog({ title, content, actions, onClose }) {
  const titleId = uid("dialog-title");
  const previous = document.activeElement;
  const heading = h("h2", { id: titleId }, title);
  const dialog = /** @type {HTMLDialogElement} */ (
    h(
      "dialog",
      { class: "dialog", "aria-labelledby": titleId },
      h("div", { class: "dialog-body" }, heading, content),
      h("div", { class: "dialog-actions" }, actions),
    )
  );
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (previous instanceof HTMLElement && previous.isConnected) previous.focus();
    onClose?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, heading };
}

/**
 * Asks before something that cannot be undone. Resolves true when confirmed.
 * @param {{title: string, message: unknown, confirmLabel: string, danger?: boolean}} options
 * @returns {Promise<boolean>}
 */
export function confirmDialog({ title, message, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    let confirmed = false;
    const cancel = h("button", { type: "button", class: "btn" }, "Cancel");
    const confirm = h(
      "button",
      { type: "button", class: danger ? "btn btn-danger-solid" : "btn btn-primary" },
      confirmLabel,
    );
    const { dialog } = openDialog({
      title,
      content: [h("p", null, message)],
      actions: [cancel, confirm],
      onClose: () => resolve(confirmed),
    });
    cancel.addEventListener("click", () => dialog.close());
    confirm.addEventListener("click", () => {
      confirmed = true;
      dialog.close();
    });
    cancel.focus();
  });
}

/** A spinner with a message, while a page loads. */
export function loading(message) {
  return h(
    "div",
    { class: "loading", role: "status" },
    h("span", { class: "spinner", "aria-hidden": "true" }),
    message,
  );
}

/** A friendly block for an empty list. */
export function emptyState({ iconName, title, message, action }) {
  return h(
    "div",
    { class: "empty" },
    h("div", { class: "empty-icon" }, icon(iconName)),
    h("h2", null, title),
    h("p", null, message),
    action,
  );
}

/** The standard page header: an `h1` the router focuses, a lede, and actions. */
export function pageHeader(title, lede, actions) {
  return h(
    "div",
    { class: "page-header" },
    h("div", null, h("h1", { tabindex: "-1" }, title), lede ? h("p", { class: "page-lede" }, lede) : null),
    actions ? h("div", { class: "page-actions" }, actions) : null,
  );
}
