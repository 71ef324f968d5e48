import { readFileSync } from "node:fs";

const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

/** The installed package version (health record `version`, `svc --version`). */
export const VERSION: string = manifest.version;

/** The server config schema version; `spec_version` in readiness and doctor compares against it. */
export const SPEC_VERSION = 1;
