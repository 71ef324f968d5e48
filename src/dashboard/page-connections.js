// The signed-in principal's connections, grouped per provider: status, default, expiry, and the
// two everyday changes (make default, log out).

import { api, connectionPath } from "./api.js";
import { connectProvider } from "./connect.js";
import {
  confirmDialog,
  emptyState,
  h,
  icon,
  pageHeader,
  providerAvatar,
  relativeTime,
  timeElement,
  toast,
  uid,
} from "./dom.js";
import { CONNECTION_STATUS } from "./labels.js";

/** @param {any} ctx */
export async function connectionsPage(ctx) {
  const list = h("div", { class: "stack" });
  const summary = h("span");

  async function load() {
    const [connections, providers] = await Promise.all([ctx.api("/api/connections"), ctx.providers()]);
    const names = new Map(providers.map((provider) => [provider.name, provider]));
    const groups = new Map();
    for (const connection of connections) {
      if (!groups.has(connection.provider)) groups.set(connection.provider, []);
      groups.get(connection.provider).push(connection);
    }
    summary.textContent =
      connections.length === 0
        ? "Nothing is stored yet."
        : `${connections.length} ${connections.length === 1 ? "connection" : "connections"} across ${groups.size} ${
            groups.size === 1 ? "provider" : "providers"
          }, stored encrypted in your vault.`;
    if (connections.length === 0) {
      list.replaceChildren(
        h(
          "div",
          { class: "card" },
          emptyState({
            iconName: "plug",
            title: "No connections yet",
            message: [
              "Connect a provider to store its API key or OAuth tokens. Programs you start with ",
              h("code", null, "svc run"),
              " then use them without ever seeing the secret.",
            ],
            action: h(
              "a",
              { class: "btn btn-primary", href: "/providers" },
              icon("plus"),
              "Browse providers",
            ),
          }),
        ),
      );
      return;
    }
    list.replaceChildren(
      ...[...groups].map(([provider, rows]) =>
        providerGroup(names.get(provider) ?? { name: provider, display_name: provider }, rows, load),
      ),
    );
  }

  await load();
  ctx.onConnectionsChanged(() => load().catch((error) => toast(error.message, { kind: "error" })));

  const node = h(
    "div",
    { class: "page" },
    pageHeader(
      "Connections",
      summary,
      h("a", { class: "btn btn-primary", href: "/providers" }, icon("plus"), "Connect a provider"),
    ),
    list,
  );
  return { title: "Connections", node };
}

/**
 * @param {{name: string, display_name: string}} provider
 * @param {any[]} rows
 * @param {() => Promise<void>} reload
 */
function providerGroup(provider, rows, reload) {
  const headingId = uid("group");
  return h(
    "section",
    { class: "card", "aria-labelledby": headingId },
    h(
      "div",
      { class: "group-header" },
      providerAvatar(provider.name, provider.display_name),
      h(
        "div",
        { class: "group-title" },
        h("h2", { id: headingId }, provider.display_name),
        h("span", { class: "group-sub mono" }, provider.name),
      ),
      h(
        "span",
        { class: "badge group-count" },
        `${rows.length} ${rows.length === 1 ? "connection" : "connections"}`,
      ),
    ),
    h(
      "ul",
      { class: "rows", "aria-label": `${provider.display_name} connections` },
      rows.map((row) => connectionRow(provider, row, rows, reload)),
    ),
  );
}

function credentialText(connection) {
  const credential = connection.credential;
  if (credential.type === "api_key")
    return credential.redacted ? `API key ${credential.redacted}` : "API key";
  if (credential.type === "aws_sigv4")
    return `AWS key ${credential.access_key_id}${credential.region ? ` · ${credential.region}` : ""}`;
  const scopes = credential.scopes.length ? ` · ${credential.scopes.join(" ")}` : "";
  return `OAuth${scopes}`;
}

function expiryText(connection) {
  if (!connection.expires_at) return "No expiry";
  const past = new Date(connection.expires_at).getTime() <= Date.now();
  const words = relativeTime(connection.expires_at);
  const refreshes = connection.credential.type === "oauth2" && connection.credential.has_refresh_token;
  return timeElement(
    connection.expires_at,
    past ? `Expired ${words}${refreshes ? " · refreshes on use" : ""}` : `Expires ${words}`,
  );
}

function connectionRow(provider, connection, siblings, reload) {
  const status = CONNECTION_STATUS[connection.status] ?? {
    label: connection.status,
    kind: "info",
    title: "",
  };
  const who = `${provider.display_name} ${connection.connection}`;
  const actions = [];

  if (connection.status === "expired" || connection.status === "refresh_failed") {
    const reconnect = h(
      "button",
      { type: "button", class: "btn btn-sm btn-primary" },
      icon("refresh"),
      "Reconnect",
      h("span", { class: "sr-only" }, ` ${who}`),
    );
    reconnect.addEventListener("click", () =>
      connectProvider(
        /** @type {any} */ (provider),
        siblings.map((row) => row.connection),
        { connection: connection.connection, force: true },
      ),
    );
    actions.push(reconnect);
  }

  if (!connection.is_default) {
    const makeDefault = /** @type {HTMLButtonElement} */ (
      h(
        "button",
        { type: "button", class: "btn btn-sm" },
        "Set default",
        h("span", { class: "sr-only" }, ` ${who}`),
      )
    );
    makeDefault.addEventListener("click", async () => {
      makeDefault.disabled = true;
      try {
        await api(connectionPath(connection.provider, connection.connection, "default"), { method: "POST" });
        toast(`“${connection.connection}” is now the default ${provider.display_name} connection.`, {
          kind: "ok",
        });
        await reload();
      } catch (error) {
        makeDefault.disabled = false;
        toast(error.message, { kind: "error" });
      }
    });
    actions.push(makeDefault);
  }

  const logout = /** @type {HTMLButtonElement} */ (
    h(
      "button",
      { type: "button", class: "btn btn-sm btn-danger" },
      "Log out",
      h("span", { class: "sr-only" }, ` ${who}`),
    )
  );
  logout.addEventListener("click", async () => {
    const confirmed = await confirmDialog({
      title: `Log out of ${provider.display_name}?`,
      message: [
        "The connection ",
        h("code", null, connection.connection),
        " and its stored credential are deleted from this machine. The provider is not contacted: revoke the key there if it leaked.",
      ],
      confirmLabel: "Log out",
      danger: true,
    });
    if (!confirmed) return;
    logout.disabled = true;
    try {
      const result = await api(connectionPath(connection.provider, connection.connection, "logout"), {
        method: "POST",
      });
      const next =
        connection.is_default && result.default_connection
          ? ` “${result.default_connection}” is now the default.`
          : "";
      toast(`Logged out of ${provider.display_name} “${connection.connection}”.${next}`, { kind: "ok" });
      await reload();
    } catch (error) {
      logout.disabled = false;
      toast(error.message, { kind: "error" });
    }
  });
  actions.push(logout);

  return h(
    "li",
    { class: "row" },
    h(
      "div",
      { class: "row-main" },
      h(
        "div",
        { class: "row-title" },
        h("span", null, connection.connection),
        connection.is_default ? h("span", { class: "badge badge-accent" }, "Default") : null,
        h("span", { class: `badge badge-dot badge-${status.kind}`, title: status.title }, status.label),
      ),
      h(
        "div",
        { class: "row-meta" },
        h("span", null, credentialText(connection)),
        h("span", null, expiryText(connection)),
        h("span", null, "Updated ", timeElement(connection.updated_at, relativeTime(connection.updated_at))),
      ),
      connection.refresh_error
        ? h("p", { class: "row-error" }, `Last refresh: ${connection.refresh_error}`)
        : null,
    ),
    h("div", { class: "row-actions" }, actions),
  );
}
