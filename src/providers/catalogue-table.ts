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

/** The section body (heading included), ending with a newline. */
export function renderBundledTable(providers: readonly Provider[]): string {
  const counts = FLOWS.map((flow) => `${providers.filter((p) => p.flow === flow).length} ${flow}`);
  const header = ["name", "display name", "auth type", "flow", "api_url", "source of the settings"];
  const rows = providers.map((provider) => [
    `\`${provider.name}\``,
    provider.display_name.replaceAll("|", "\\|"),
    provider.auth_type,
    provider.flow,
    providerApiUrls(provider)
      .map((entry) => `\`${entry.replaceAll("|", "\\|")}\``)
      .join(", "),
    `[docs](${provider.docs_url})`,
  ]);
  const widths = header.map((cell, index) => Math.max(cell.length, ...rows.map((r) => r[index]!.length)));
  return [
    TABLE_HEADING,
    "",
    `${providers.length} providers: ${counts.join(", ")}. Generated from the bundled files by \`npm run docs:providers\` (name, auth type, flow, api_url and the documentation page each file cites).`,
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
