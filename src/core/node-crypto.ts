import { createRequire } from "node:module";

/**
 * node:crypto, loaded with require() rather than import: Node's ESM view of a builtin reads every
 * export once, and node:crypto's include lazy getters that load WebCrypto, which every CLI start-up
 * would pay for and none uses. Import types from "node:crypto" as usual (`import type`).
 */
export const nodeCrypto: typeof import("node:crypto") = createRequire(import.meta.url)("node:crypto");
