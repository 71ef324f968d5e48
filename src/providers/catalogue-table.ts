/**
 * The "Bundled providers" section of docs/providers.md, generated from the bundled files so the
 * documentation cannot drift from the catalogue (a test compares them; `npm run docs:providers`
 * rewrites it).
 */
import { FLOWS, type Provider, providerApiUrls } from "./schema.ts";

export const TABLE_HEADING = "## Bundled providers";

function row(cells: string[], widths: number[]): string {
  return `| ${cells.map((cell, index) => cell.padEnd(widths[index]!)).join(" | ")} |`;
}

/**
 * Each documentation page once, named by the fields it backs, then whether the fields were verified
 * against those pages (and when) or the sources were recorded without being re-read.
 */
function sourcesCell(provider: Provider): string {
  const fields = new Map<string, string[]>();
  for (const [field, url] of Object.entries(provider.sources ?? { "(all)": provider.docs_url })) {
    fields.set(url, [...(fields.get(url) ?? []), field]);
  }
  const links = [...fields].map(([url, names]) => `[${names.join(", ")}](${url.replaceAll("|", "%7C")})`);
  const status = provider.checked ? `verified ${provider.checked}` : "sources not re-checked";
  return `${links.join("; ")} (${status})`;
}

/** The section body (heading included), ending with a newline. */
export function renderBundledTable(providers: readonly Provider[]): string {
  const counts = FLOWS.map((flow) => `${providers.filter((p) => p.flow === flow).length} ${flow}`);
  const header = ["name", "display name", "auth type", "flow", "api_url", "sources (verified)"];
  const verified = providers.filter((provider) => provider.checked).length;
  const rows = providers.map((provider) => [
    `\`${provider.name}\``,
    provider.display_name.replaceAll("|", "\\|"),
    provider.auth_type,
    provider.flow,
    providerApiUrls(provider)
      .map((entry) => `\`${entry.replaceAll("|", "\\|")}\``)
      .join(", "),
    sourcesCell(provider),
  ]);
  const widths = header.map((cell, index) => Math.max(cell.length, ...rows.map((r) => r[index]!.length)));
  return [
    TABLE_HEADING,
    "",
    `${providers.length} providers: ${counts.join(", ")}; ${verified} verified against their sources, ${providers.length - verified} not re-checked. Generated from the bundled files by \`npm run docs:providers\`: name, auth type, flow, api_url, and for each group of fields the provider documentation page it was read from (\`sources\`), then "verified <date>" when the fields were compared with those pages on that date (\`checked\`), or "sources not re-checked" when the file names its pages but nobody has re-read them yet.`,
    "",
    row(header, widths),
    `| ${widths.map((width) => "-".repeat(width)).join(" | ")} |`,
    ...rows.map((cells) => row(cells, widths)),
    "",
  ].join("\n");
}

/** Replaces the section in the document text (it is the last section). */
export function withBundledTable(document: string, providers: readonly Provider[]): string {
  const start = document.indexOf(TABLE_HEADING);
  const head = start === -1 ? `${document.trimEnd()}\n\n` : document.slice(0, start);
  return head + renderBundledTable(providers);
}
