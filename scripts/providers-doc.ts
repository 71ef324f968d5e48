/** Regenerates the "Bundled providers" table of docs/providers.md from src/providers/bundled/. */
import { readFileSync, writeFileSync } from "node:fs";
import { loadBundledProviders } from "../src/providers/catalogue.ts";
import { withBundledTable } from "../src/providers/catalogue-table.ts";

const path = new URL("../docs/providers.md", import.meta.url);
writeFileSync(path, withBundledTable(readFileSync(path, "utf8"), loadBundledProviders()));
console.log("docs/providers.md: bundled providers table regenerated");
