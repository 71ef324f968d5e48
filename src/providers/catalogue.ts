/**
 * The bundled provider catalogue: one JSON file per provider under `./bundled/`, each validated
 * against `ProviderDefinitionSchema` and tagged `source: "bundled"`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { InvalidInputError } from "../core/errors.ts";
import {
  formatZodIssues,
  type Provider,
  type ProviderDefinition,
  ProviderDefinitionSchema,
} from "./schema.ts";

/** The folder holding the bundled provider files (`<name>.json`). */
export const BUNDLED_PROVIDERS_DIR: string = fileURLToPath(new URL("./bundled/", import.meta.url));

let cache: readonly Provider[] | undefined;

/** Parses one bundled file's text; throws InvalidInputError naming the file. */
export function parseBundledProviderFile(fileName: string, text: string): Provider {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(
      `bundled provider ${fileName}: not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
  const result = ProviderDefinitionSchema.safeParse(json);
  if (!result.success) {
    throw new InvalidInputError(
      `bundled provider ${fileName}: ${formatZodIssues(result.error.issues, json)}`,
      {
        cause: result.error,
      },
    );
  }
  const definition = result.data as ProviderDefinition;
  const expected = `${definition.name}.json`;
  if (fileName !== expected) {
    throw new InvalidInputError(
      `bundled provider ${fileName}: name "${definition.name}" requires the file ${expected}`,
    );
  }
  return { ...definition, source: "bundled" };
}

/**
 * Reads and validates every bundled provider once (later calls reuse the parsed list), sorted by
 * name. Each call returns fresh copies, so callers may modify them. Throws on the first bad file,
 * naming it.
 */
export function loadBundledProviders(): Provider[] {
  if (!cache) {
    const files = readdirSync(BUNDLED_PROVIDERS_DIR)
      .filter((file) => file.endsWith(".json"))
      .sort();
    const providers: Provider[] = [];
    const seen = new Set<string>();
    for (const file of files) {
      const provider = parseBundledProviderFile(
        file,
        readFileSync(join(BUNDLED_PROVIDERS_DIR, file), "utf8"),
      );
      if (seen.has(provider.name)) {
        throw new InvalidInputError(`bundled provider ${file}: duplicate name "${provider.name}"`);
      }
      seen.add(provider.name);
      providers.push(provider);
    }
    providers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    cache = Object.freeze(providers);
  }
  return cache.map((provider) => structuredClone(provider));
}
