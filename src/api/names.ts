/**
 * Connection names, without zod: the CLI reads these at start-up, and loading the wire schemas
 * (zod) would cost every command tens of milliseconds.
 */

/** A connection name: like a provider name, also allowing upper case and dots. */
export const CONNECTION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export const DEFAULT_CONNECTION = "default";
