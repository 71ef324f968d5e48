// Agents: every identity of the signed-in principal (an admin: of every principal), with what it may
// use (its scope), when it was last seen, what it did through the proxy, and the two changes a
// person makes (edit the scope, revoke). The daemon enforces who may do what; the page only asks.

import { api } from "./api.js";
import {
  confirmDialog,
  emptyState,
  h,
  openDialog,
  pageHeader,
  providerAvatar,
  relativeTime,
  srOnly,
  timeElement,
  toast,
  uid,
} from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
/** The outcomes the proxy records, in the order the bars stack. */
const OUTCOMES = /** @type {const} */ (["success", "failure", "error"]);
const OUTCOME_WORDS = { success: "succeeded", failure: "failed", error: "no answer" };
const ENTRY = /^[a-z0-9][a-z0-9_-]{0,63}(?::[A-Za-z0-9][A-Za-z0-9_.-]{0,63})?$/;

/** @param {string} handle @param {string} [action] */
function agentPath(handle, action) {
  return `/api/agents/${encodeURIComponent(handle)}${action ? `/${action}` : ""}`;
}

/** How a scope reads: the same words as `svc agent show`. */
function scopeWords(scope) {
  if (scope === null) return "Every connection";
  return scope.length === 0 ? "Nothing" : scope.join(", ");
}

/** @param {any} ctx */
export async function agentsPage(ctx) {
  const admin = ctx.session.role === "admin";
  const list = h("div", { class: "stack" });
  const summary = h("span");

  async function load() {
    const [{ agents }, providers] = await Promise.all([
      ctx.api(admin ? "/api/agents?all=true" : "/api/agents"),
      ctx.providers(),
    ]);
    const names = new Map(providers.map((provider) => [provider.name, provider.display_name]));
    const activities = await Promise.all(agents.map((agent) => ctx.api(agentPath(agent.handle, "activity"))));
    const active = agents.filter((agent) => !agent.revoked_at).length;
    summary.textContent =
      agents.length === 0
        ? "No agent identity is registered yet."
        : `${active} active ${active === 1 ? "agent" : "agents"}${
            agents.length > active ? `, ${agents.length - active} revoked` : ""
          }${admin ? " across every account" : ""}.`;
    if (agents.length === 0) {
      list.replaceChildren(
        h(
          "div",
          { class: "card" },
          emptyState({
            iconName: "grid",
            title: "No agents yet",
            message: [
              "Create one for each program that should use your connections, limited to what it needs: ",
              h("code", null, "svc agent create claude --allow anthropic"),
            ],
            action: null,
          }),
        ),
      );
      return;
    }
    list.replaceChildren(
      ...agents.map((agent, index) => agentCard(ctx, agent, activities[index], names, load)),
    );
  }

  await load();

  const scope = admin
    ? [
        h("span", { class: "badge badge-accent" }, "All principals"),
        "You are an admin: every account's agents.",
      ]
    : [h("span", { class: "badge badge-info" }, "Your agents"), "The identities that act for your account."];

  const node = h(
    "div",
    { class: "page" },
    pageHeader("Agents", h("span", { class: "scope-note" }, scope)),
    h("p", { class: "page-summary", "aria-live": "polite" }, summary),
    list,
  );
  return { title: "Agents", node };
}

/**
 * @param {any} ctx
 * @param {any} agent
 * @param {any} activity
 * @param {Map<string, string>} names
 * @param {() => Promise<void>} reload
 */
function agentCard(ctx, agent, activity, names, reload) {
  const headingId = uid("agent");
  const revoked = Boolean(agent.revoked_at);
  const otherAccount = agent.principal_id !== ctx.session.principal_id;
  const badges = [
    revoked
      ? h("span", { class: "badge badge-dot badge-danger" }, "Revoked")
      : h("span", { class: "badge badge-dot badge-ok" }, "Active"),
    agent.scope === null
      ? h("span", { class: "badge badge-info" }, "Unrestricted")
      : h("span", { class: "badge badge-accent" }, "Scoped"),
    otherAccount
      ? h(
          "span",
          { class: "tag", title: "The account this agent acts for" },
          agent.principal_id ?? "unclaimed",
        )
      : null,
  ];

  const actions = [
    h(
      "a",
      { class: "btn btn-sm", href: `/audit?identity=${encodeURIComponent(agent.handle)}` },
      "Audit events",
      srOnly(` of ${agent.handle}`),
    ),
  ];
  if (!revoked) {
    const edit = h(
      "button",
      { type: "button", class: "btn btn-sm" },
      "Edit scope",
      srOnly(` of ${agent.handle}`),
    );
    edit.addEventListener("click", () => editScope(agent, reload));
    const revoke = /** @type {HTMLButtonElement} */ (
      h("button", { type: "button", class: "btn btn-sm btn-danger" }, "Revoke", srOnly(` ${agent.handle}`))
    );
    revoke.addEventListener("click", () => revokeAgent(agent, revoke, reload));
    actions.push(edit, revoke);
  }

  return h(
    "section",
    { class: `card agent-card${revoked ? " agent-revoked" : ""}`, "aria-labelledby": headingId },
    h(
      "div",
      { class: "group-header agent-header" },
      providerAvatar(agent.handle, agent.handle),
      h(
        "div",
        { class: "group-title" },
        h("h2", { id: headingId, class: "mono" }, agent.handle),
        h("span", { class: "group-sub mono agent-did", title: agent.did }, agent.did),
      ),
      h("div", { class: "agent-badges" }, badges),
    ),
    h(
      "div",
      { class: "agent-body" },
      h(
        "dl",
        { class: "agent-facts" },
        fact("Created", timeElement(agent.created_at, relativeTime(agent.created_at))),
        fact(
          "Last seen",
          agent.last_seen ? timeElement(agent.last_seen, relativeTime(agent.last_seen)) : "Never",
        ),
        fact(
          "May use",
          agent.scope === null || agent.scope.length === 0
            ? h("span", { class: agent.scope === null ? null : "cell-muted" }, scopeWords(agent.scope))
            : h(
                "ul",
                { class: "scope-list", "aria-label": `${agent.handle} may use` },
                agent.scope.map((entry) => h("li", { class: "tag mono" }, entry)),
              ),
        ),
        revoked
          ? fact("Revoked", [
              timeElement(agent.revoked_at, relativeTime(agent.revoked_at)),
              ` by ${agent.revoked_by ?? "its account"}`,
            ])
          : null,
      ),
      activityChart(agent.handle, activity, names),
    ),
    h("div", { class: "agent-actions row-actions" }, actions),
  );
}

function fact(term, value) {
  return h("div", { class: "agent-fact" }, h("dt", null, term), h("dd", null, value));
}

/**
 * Requests through the proxy per provider over 7 days: a real table (what a screen reader reads),
 * whose bar cells are drawn as inline SVG and hidden from assistive technology (the numbers are
 * in the next cells).
 */
function activityChart(handle, activity, names) {
  const rows = new Map();
  for (const entry of activity.last_7d) {
    const key = entry.provider ?? "(none)";
    if (!rows.has(key)) rows.set(key, { provider: key, success: 0, failure: 0, error: 0, total: 0, day: 0 });
    const row = rows.get(key);
    const outcome = OUTCOMES.includes(entry.status) ? entry.status : "error";
    row[outcome] += entry.count;
    row.total += entry.count;
  }
  for (const entry of activity.last_24h) rows.get(entry.provider ?? "(none)").day += entry.count;
  const sorted = [...rows.values()].sort((a, b) => b.total - a.total || a.provider.localeCompare(b.provider));
  const heading = h("h3", { class: "agent-chart-title" }, "Requests through the proxy, last 7 days");
  if (sorted.length === 0) {
    return h("div", { class: "agent-chart" }, heading, h("p", { class: "cell-muted" }, "No requests yet."));
  }
  const max = Math.max(...sorted.map((row) => row.total));
  return h(
    "div",
    { class: "agent-chart" },
    heading,
    h(
      "table",
      { class: "activity-table" },
      h("caption", { class: "sr-only" }, `Requests ${handle} made through the proxy, per provider`),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { scope: "col" }, "Provider"),
          h("th", { scope: "col", class: "activity-bar-col" }, srOnly("Chart")),
          h("th", { scope: "col", class: "num" }, "7 days"),
          h("th", { scope: "col", class: "num" }, "Failed"),
          h("th", { scope: "col", class: "num" }, "24 h"),
        ),
      ),
      h(
        "tbody",
        null,
        sorted.map((row) =>
          h(
            "tr",
            null,
            h("th", { scope: "row", class: "activity-provider" }, names.get(row.provider) ?? row.provider),
            h("td", { class: "activity-bar-col" }, bar(row, max)),
            h("td", { class: "num" }, String(row.total)),
            h(
              "td",
              { class: `num${row.failure + row.error > 0 ? " num-danger" : ""}` },
              String(row.failure + row.error),
            ),
            h("td", { class: "num" }, String(row.day)),
          ),
        ),
      ),
    ),
    h(
      "p",
      { class: "activity-legend", "aria-hidden": "true" },
      OUTCOMES.map((outcome) =>
        h("span", null, h("span", { class: `legend-swatch bar-${outcome}` }), OUTCOME_WORDS[outcome]),
      ),
    ),
  );
}

/** One stacked bar: successes, failures, unanswered, scaled to the busiest provider. */
function bar(row, max) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 100 10");
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("class", "activity-bar");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const track = document.createElementNS(SVG, "rect");
  track.setAttribute("class", "bar-track");
  track.setAttribute("width", "100");
  track.setAttribute("height", "10");
  track.setAttribute("rx", "2");
  svg.append(track);
  let x = 0;
  for (const outcome of OUTCOMES) {
    if (row[outcome] === 0) continue;
    // At least a sliver, so a single failure among thousands stays visible.
    const width = Math.max((row[outcome] / max) * 100, 1.5);
    const rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("class", `bar-${outcome}`);
    rect.setAttribute("x", String(x));
    rect.setAttribute("width", String(Math.min(width, 100 - x)));
    rect.setAttribute("height", "10");
    svg.append(rect);
    x += width;
  }
  return svg;
}

/** The scope editor: every connection, or only the listed entries; shows before and after. */
function editScope(agent, reload) {
  const inputId = uid("scope");
  const hintId = uid("scope-hint");
  const errorId = uid("scope-error");
  const name = uid("scope-mode");
  const everything = /** @type {HTMLInputElement} */ (
    h("input", { type: "radio", name, value: "all", checked: agent.scope === null })
  );
  const only = /** @type {HTMLInputElement} */ (
    h("input", { type: "radio", name, value: "only", checked: agent.scope !== null })
  );
  const input = /** @type {HTMLInputElement} */ (
    h("input", {
      id: inputId,
      class: "input mono",
      type: "text",
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "anthropic, github:work",
      value: agent.scope?.join(", ") ?? "",
      "aria-describedby": `${hintId} ${errorId}`,
    })
  );
  const error = h("p", { id: errorId, class: "form-error", role: "alert", hidden: true });
  const preview = h("p", { class: "scope-preview", "aria-live": "polite" });

  function entries() {
    return [
      ...new Set(
        input.value
          .split(",")
          .map((entry) => entry.trim())
          .filter(Boolean),
      ),
    ];
  }
  function next() {
    return everything.checked ? null : entries();
  }
  function update() {
    input.disabled = everything.checked;
    preview.replaceChildren(
      h("span", { class: "cell-muted" }, "Now: "),
      scopeWords(agent.scope),
      h("br"),
      h("span", { class: "cell-muted" }, "After saving: "),
      h("strong", null, scopeWords(next())),
    );
  }
  for (const control of [everything, only, input]) {
    control.addEventListener("input", () => {
      error.hidden = true;
      input.removeAttribute("aria-invalid");
      update();
    });
  }
  update();

  const cancel = h("button", { type: "button", class: "btn" }, "Cancel");
  const save = /** @type {HTMLButtonElement} */ (
    h("button", { type: "submit", class: "btn btn-primary" }, "Save scope")
  );
  const form = h(
    "form",
    { class: "scope-form", novalidate: true },
    h(
      "fieldset",
      { class: "scope-modes" },
      h("legend", { class: "label" }, `What ${agent.handle} may use`),
      h("label", { class: "checkbox" }, everything, "Every connection of its account (unrestricted)"),
      h("label", { class: "checkbox" }, only, "Only these providers and connections"),
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: inputId, class: "label" }, "Providers and connections"),
      input,
      h(
        "p",
        { id: hintId, class: "hint" },
        "Separate with commas. A provider (openai) allows all its connections; provider:connection (github:work) only that one.",
      ),
      error,
    ),
    preview,
  );
  const { dialog } = openDialog({
    title: `Scope of ${agent.handle}`,
    content: [form],
    actions: [cancel, save],
  });
  // The actions sit outside the form element: the Save button submits it explicitly.
  save.addEventListener("click", () => form.requestSubmit());
  cancel.addEventListener("click", () => dialog.close());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const scope = next();
    const bad = scope?.find((entry) => !ENTRY.test(entry));
    if (bad !== undefined) {
      error.textContent = `“${bad}” is not a provider or provider:connection.`;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.focus();
      return;
    }
    save.disabled = true;
    try {
      await api(agentPath(agent.handle, "scope"), { method: "PUT", body: { scope } });
      dialog.close();
      toast(`${agent.handle} may now use: ${scopeWords(scope)}.`, { kind: "ok" });
      await reload();
    } catch (failure) {
      save.disabled = false;
      error.textContent = failure.message;
      error.hidden = false;
    }
  });
  (agent.scope === null ? everything : input).focus();
}

async function revokeAgent(agent, button, reload) {
  const confirmed = await confirmDialog({
    title: `Revoke ${agent.handle}?`,
    message: [
      "Its next request is refused, on every replica, its pending claim links stop working, and its key ",
      "can never be registered again. This cannot be undone: create a new agent if it needs access again.",
    ],
    confirmLabel: "Revoke",
    danger: true,
  });
  if (!confirmed) return;
  button.disabled = true;
  try {
    await api(agentPath(agent.handle, "revoke"), { method: "POST" });
    toast(`${agent.handle} is revoked.`, { kind: "ok" });
    await reload();
  } catch (error) {
    button.disabled = false;
    toast(error.message, { kind: "error" });
  }
}
