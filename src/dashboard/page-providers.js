// The provider catalogue: search as you type, see what is connected, connect one.

import { connectProvider } from "./connect.js";
import { emptyState, h, icon, pageHeader, providerAvatar, uid } from "./dom.js";
import { AUTH_TYPES, FLOWS } from "./labels.js";

/** @param {any} ctx */
export async function providersPage(ctx) {
  const [providers, connections] = await Promise.all([ctx.providers(), ctx.api("/api/connections")]);
  /** @type {Map<string, string[]>} */
  let byProvider = groupNames(connections);

  const searchId = uid("provider-search");
  const search = /** @type {HTMLInputElement} */ (
    h("input", {
      id: searchId,
      class: "input",
      type: "search",
      placeholder: "Search by name, auth type or flow",
      autocomplete: "off",
      spellcheck: "false",
    })
  );
  const count = h("p", { class: "toolbar-count", "aria-live": "polite" });
  const noMatch = emptyState({
    iconName: "search",
    title: "No provider matches",
    message: "Try another name, or a word like “oauth”, “device” or “api key”.",
    action: null,
  });
  noMatch.hidden = true;

  const cards = providers.map((provider) => {
    const state = h("span", { class: "provider-state" });
    const button = h(
      "button",
      { type: "button", class: "btn btn-sm" },
      "Connect",
      h("span", { class: "sr-only" }, ` ${provider.display_name}`),
    );
    button.addEventListener("click", () => connectProvider(provider, byProvider.get(provider.name) ?? []));
    const headingId = uid("provider");
    const item = h(
      "li",
      null,
      h(
        "article",
        { class: "card provider-card", "aria-labelledby": headingId },
        h(
          "div",
          { class: "provider-head" },
          providerAvatar(provider.name, provider.display_name),
          h(
            "div",
            { class: "provider-names" },
            h("h2", { id: headingId }, provider.display_name),
            h("span", { class: "mono" }, provider.name),
          ),
        ),
        h(
          "div",
          { class: "provider-tags" },
          h("span", { class: "tag" }, AUTH_TYPES[provider.auth_type] ?? provider.auth_type),
          provider.flow !== "api_key"
            ? h("span", { class: "tag" }, FLOWS[provider.flow] ?? provider.flow)
            : null,
          provider.source === "custom" ? h("span", { class: "badge badge-accent" }, "Custom") : null,
        ),
        h("div", { class: "provider-foot" }, state, button),
      ),
    );
    const haystack = [
      provider.name,
      provider.display_name,
      provider.auth_type,
      AUTH_TYPES[provider.auth_type],
      provider.flow,
      FLOWS[provider.flow],
      provider.source,
    ]
      .join(" ")
      .toLowerCase();
    return { provider, item, state, haystack };
  });

  function showStates() {
    for (const { provider, state } of cards) {
      const names = byProvider.get(provider.name) ?? [];
      state.textContent = names.length === 0 ? "Not connected" : `Connected · ${names.join(", ")}`;
      state.title = state.textContent;
      state.classList.toggle("connected", names.length > 0);
    }
  }

  function filter() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const card of cards) {
      const match = words.every((word) => card.haystack.includes(word));
      card.item.hidden = !match;
      if (match) shown += 1;
    }
    noMatch.hidden = shown > 0;
    count.textContent =
      words.length === 0 ? `${providers.length} providers` : `${shown} of ${providers.length} providers`;
  }

  search.addEventListener("input", filter);
  search.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && search.value) {
      search.value = "";
      filter();
    }
  });
  ctx.onConnectionsChanged(async () => {
    byProvider = groupNames(await ctx.api("/api/connections"));
    showStates();
  });

  showStates();
  filter();
  const connected = [...byProvider.keys()].length;

  const node = h(
    "div",
    { class: "page" },
    pageHeader(
      "Providers",
      `${providers.length} services svc can hold credentials for${connected ? `; ${connected} connected` : ""}. Connect one to store its API key or OAuth tokens in your vault.`,
    ),
    h(
      "div",
      { class: "toolbar", role: "search" },
      h(
        "div",
        { class: "search" },
        h("label", { for: searchId, class: "sr-only" }, "Search providers"),
        icon("search"),
        search,
      ),
      count,
    ),
    h(
      "ul",
      { class: "provider-grid", "aria-label": "Providers" },
      cards.map((card) => card.item),
    ),
    noMatch,
  );
  return { title: "Providers", node };
}

/** @param {Array<{provider: string, connection: string}>} connections */
function groupNames(connections) {
  const map = new Map();
  for (const { provider, connection } of connections) {
    if (!map.has(provider)) map.set(provider, []);
    map.get(provider).push(connection);
  }
  return map;
}
