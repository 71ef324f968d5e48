/**
 * The api_key flow: checking a pasted key against the provider's documented format, and turning
 * a stored key into the header the proxy injects.
 */
import { InvalidInputError } from "../core/errors.ts";
import type { ApiKeyConfig, ProviderDefinition } from "../providers/schema.ts";

/** Keys longer than this are refused: no provider issues them, and they bloat every request. */
export const MAX_API_KEY_LENGTH = 4096;

/**
 * Returns the key as it will be stored (surrounding whitespace removed) or throws
 * InvalidInputError whose message is what the person entering the key sees.
 */
export function checkApiKey(
  provider: Pick<ProviderDefinition, "display_name" | "api_key">,
  raw: string,
): string {
  const key = raw.trim();
  if (key === "") throw new InvalidInputError(`the ${provider.display_name} API key is empty`);
  if (key.length > MAX_API_KEY_LENGTH) {
    throw new InvalidInputError(
      `the ${provider.display_name} API key is longer than ${MAX_API_KEY_LENGTH} characters; paste only the key`,
    );
  }
  // Header values cannot carry control characters; a key holding one was pasted with something else.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find control characters
  if (/[\u0000-\u001f\u007f]/.test(key) || /\s/.test(key)) {
    throw new InvalidInputError(
      `the ${provider.display_name} API key contains spaces or control characters; paste only the key`,
    );
  }
  const pattern = provider.api_key?.key_pattern;
  if (pattern && !new RegExp(pattern).test(key)) {
    const hint = provider.api_key?.key_pattern_hint;
    throw new InvalidInputError(
      `that does not look like an API key for ${provider.display_name}${hint ? `; expected format: ${hint}` : ""}`,
    );
  }
  return key;
}

/** The header carrying an API key: `header_name: [header_prefix ]key`. */
export function apiKeyHeader(config: ApiKeyConfig, key: string): { name: string; value: string } {
  return { name: config.header_name, value: config.header_prefix ? `${config.header_prefix} ${key}` : key };
}
