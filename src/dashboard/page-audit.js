// The audit log, newest first: an admin sees every principal's events, a user only their own
// (the daemon enforces it; the page says which). Filters live in the URL, so Back and reload keep them.

import { emptyState, h, pageHeader, srOnly, timeElement, uid } from "./dom.js";
import { AUDIT_EVENTS, auditStatusKind } from "./labels.js";

const PAGE_SIZE = 50;
const COLUMNS = ["Time", "Event", "Provider", "Connection", "Identity", "Status", "Source"];

/** @param {any} ctx */
export async function auditPage(ctx) {
  const admin = ctx.session.role === "admin";
  const providers = await ctx.providers();
  const displayNames = new Map(providers.map((provider) => [provider.name, provider.display_name]));

  const providerId = uid("audit-provider");
  const eventId = uid("audit-event");
  const providerSelect = /** @type {HTMLSelectElement} */ (
    h(
      "select",
      { id: providerId, class: "select", name: "provider" },
      h("option", { value: "" }, "All providers"),
      [...providers]
        .sort((a, b) => a.display_name.localeCompare(b.display_name))
        .map((provider) => h("option", { value: provider.name }, provider.display_name)),
    )
  );
  const eventSelect = /** @type {HTMLSelectElement} */ (
    h(
      "select",
      { id: eventId, class: "select mono", name: "event" },
      h("option", { value: "" }, "All events"),
      AUDIT_EVENTS.map((event) => h("option", { value: event }, event)),
    )
  );
  providerSelect.value = ctx.url.searchParams.get("provider") ?? "";
  eventSelect.value = ctx.url.searchParams.get("event") ?? "";
  // Set by the Agents page's "Audit events" link; cleared with its button.
  let identity = ctx.url.searchParams.get("identity") ?? "";
  const clearIdentity = h("button", { type: "button", class: "btn btn-sm" }, "Show every identity");
  const identityFilter = h(
    "p",
    { class: "identity-filter", hidden: !identity },
    "Only the events of ",
    h("code", null, identity),
    clearIdentity,
  );

  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "table" },
    h("caption", { class: "sr-only" }, admin ? "Audit events of all principals" : "Your audit events"),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        COLUMNS.map((column) => h("th", { scope: "col" }, column)),
      ),
    ),
    tbody,
  );
  const count = h("p", { "aria-live": "polite" });
  const more = /** @type {HTMLButtonElement} */ (
    h("button", { type: "button", class: "btn btn-sm" }, "Load more")
  );
  const empty = h(
    "div",
    { hidden: true },
    emptyState({
      iconName: "list",
      title: "No events",
      message: "Nothing recorded yet.",
      action: null,
    }),
  );
  const foot = h("div", { class: "table-foot" }, count, more);

  let cursor = /** @type {string | undefined} */ (undefined);
  let shown = 0;

  async function load(reset) {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (providerSelect.value) query.set("provider", providerSelect.value);
    if (eventSelect.value) query.set("event", eventSelect.value);
    if (identity) query.set("identity", identity);
    if (!reset && cursor) query.set("cursor", cursor);
    more.disabled = true;
    more.textContent = "Loading…";
    try {
      const page = await ctx.api(`/api/audit/events?${query}`);
      if (reset) {
        tbody.replaceChildren();
        shown = 0;
      }
      tbody.append(...page.events.map((event) => eventRow(event, displayNames)));
      shown += page.events.length;
      cursor = page.next_cursor;
      more.hidden = !cursor;
      table.hidden = shown === 0;
      empty.hidden = shown > 0;
      const emptyText = empty.querySelector("p");
      if (emptyText) {
        emptyText.textContent =
          providerSelect.value || eventSelect.value || identity
            ? "Nothing matches these filters."
            : "Nothing recorded yet.";
      }
      count.textContent =
        shown === 0 ? "" : `${shown} ${shown === 1 ? "event" : "events"}${cursor ? "" : " · that is all"}`;
    } finally {
      more.disabled = false;
      more.textContent = "Load more";
    }
  }

  function applyFilters() {
    const search = new URLSearchParams();
    if (providerSelect.value) search.set("provider", providerSelect.value);
    if (eventSelect.value) search.set("event", eventSelect.value);
    if (identity) search.set("identity", identity);
    history.replaceState(null, "", `/audit${search.size ? `?${search}` : ""}`);
    void load(true).catch((error) => {
      count.textContent = error.message;
    });
  }
  providerSelect.addEventListener("change", applyFilters);
  eventSelect.addEventListener("change", applyFilters);
  clearIdentity.addEventListener("click", () => {
    identity = "";
    identityFilter.hidden = true;
    applyFilters();
    providerSelect.focus();
  });
  more.addEventListener("click", async () => {
    const before = shown;
    await load(false).catch((error) => {
      count.textContent = error.message;
    });
    // Keyboard users continue from the first new row rather than starting over.
    const first = tbody.children[before];
    if (first instanceof HTMLElement) {
      first.tabIndex = -1;
      first.focus();
    }
  });

  await load(true);

  const scope = admin
    ? [
        h("span", { class: "badge badge-accent" }, "All principals"),
        "You are an admin: every account's events.",
      ]
    : [h("span", { class: "badge badge-info" }, "Your events"), "Only your own activity is shown."];

  const node = h(
    "div",
    { class: "page" },
    pageHeader("Audit log", h("span", { class: "scope-note" }, scope)),
    h(
      "form",
      { class: "filters", role: "search", "aria-label": "Filter events" },
      h("div", { class: "field" }, h("label", { for: providerId }, "Provider"), providerSelect),
      h("div", { class: "field" }, h("label", { for: eventId }, "Event"), eventSelect),
    ),
    identityFilter,
    h("div", { class: "card table-card" }, h("div", { class: "table-scroll" }, table), empty, foot),
  );
  node.querySelector("form")?.addEventListener("submit", (event) => event.preventDefault());
  return { title: "Audit log", node };
}

function eventRow(event, displayNames) {
  const detail = event.detail
    ? Object.entries(event.detail)
        .map(([key, value]) => `${key}=${value}`)
        .join(" ")
    : "";
  const cell = (label, content, className) => h("td", { "data-label": label, class: className }, content);
  const dash = () => [h("span", { class: "cell-muted", "aria-hidden": "true" }, "—"), srOnly("none")];
  return h(
    "tr",
    null,
    cell("Time", timeElement(event.timestamp, shortDateTime(event.timestamp)), "cell-time"),
    cell(
      "Event",
      h("div", null, event.event, detail ? h("span", { class: "cell-detail" }, detail) : null),
      "cell-event",
    ),
    cell("Provider", event.provider ? (displayNames.get(event.provider) ?? event.provider) : dash()),
    cell("Connection", event.connection ?? dash()),
    cell("Identity", event.identity ?? dash(), "cell-identity"),
    cell(
      "Status",
      h("span", { class: `badge badge-dot badge-${auditStatusKind(event.status)}` }, event.status),
    ),
    cell("Source", h("span", { class: "tag" }, event.source)),
  );
}

const thisYear = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "numeric",
  minute: "2-digit",
  second: "2-digit",
});
const otherYear = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** Local time, without the year when it is this year's (the ISO time is the tooltip). */
function shortDateTime(iso) {
  const date = new Date(iso);
  return (date.getFullYear() === new Date().getFullYear() ? thisYear : otherYear).format(date);
}
