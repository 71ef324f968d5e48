import {
  InvalidInputError,
  ProviderAlreadyRegisteredError,
  ProviderNotFoundError,
} from "../../core/errors.ts";
import { closestMatches } from "../../core/suggest.ts";
import { type Provider, parseProvider, parseProviderDefinition } from "../../providers/schema.ts";
import type { CustomProviderRepository } from "../../store/custom-providers.ts";
import type { ChangeNotices } from "./change-notices.ts";

/** The largest provider definition accepted (bundled ones are under 2 KiB). */
export const MAX_DEFINITION_BYTES = 64 * 1024;

export interface RegisterResult {
  provider: Provider;
  created: boolean;
  overridesBundled: boolean;
}

/**
 * Bundled plus custom providers. Custom definitions live in the store (they survive restarts) and
 * are mirrored in memory, since every credential resolve consults the list; a custom provider with
 * a bundled name overrides it until removed. `version` changes whenever the list does. A change
 * made by any replica makes every replica read the custom definitions again.
 */
export class ProviderRegistry {
  readonly #repository: CustomProviderRepository;
  readonly #notices: ChangeNotices;
  readonly #bundled: ReadonlyMap<string, Provider>;
  readonly #bundledIssue: string | undefined;
  #custom = new Map<string, Provider>();
  #customIssues: string[] = [];
  #merged: Provider[] = [];
  #version = 0;

  constructor(repository: CustomProviderRepository, bundled: () => Provider[], notices: ChangeNotices) {
    this.#repository = repository;
    this.#notices = notices;
    let list: Provider[] = [];
    try {
      list = bundled();
    } catch (error) {
      this.#bundledIssue = error instanceof Error ? error.message : String(error);
    }
    this.#bundled = new Map(list.map((provider) => [provider.name, provider]));
  }

  /** Loads the custom definitions, and again whenever a replica changes them. */
  async start(): Promise<void> {
    await this.load();
    await this.#notices.listen(() => {
      this.load().catch(() => undefined);
    });
  }

  /** Whether the list may lag behind registrations made by other replicas (hosted mode). */
  get mayBeStale(): boolean {
    return this.#notices.shared;
  }

  /** Reads the custom definitions from the store; one that no longer parses is reported, not served. */
  async load(): Promise<void> {
    const custom = new Map<string, Provider>();
    const issues: string[] = [];
    for (const row of await this.#repository.list()) {
      try {
        custom.set(row.name, parseProvider({ ...JSON.parse(row.definition), source: "custom" }));
      } catch (error) {
        issues.push(`custom provider ${row.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    this.#custom = custom;
    this.#customIssues = issues;
    this.#rebuild();
  }

  #rebuild(): void {
    const merged = new Map(this.#bundled);
    for (const [name, provider] of this.#custom) merged.set(name, provider);
    this.#merged = [...merged.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    this.#version++;
  }

  /** Changes whenever a provider is registered, replaced or removed. */
  get version(): number {
    return this.#version;
  }

  /** Every provider, sorted by name (a custom one in place of a bundled one of the same name). */
  list(): readonly Provider[] {
    return this.#merged;
  }

  isBundled(name: string): boolean {
    return this.#bundled.has(name);
  }

  find(name: string): Provider | undefined {
    return this.#custom.get(name) ?? this.#bundled.get(name);
  }

  /** The provider, or ProviderNotFoundError with a "did you mean" hint. */
  get(name: string): Provider {
    const provider = this.find(name);
    if (provider) return provider;
    const names = new Set([...this.#bundled.keys(), ...this.#custom.keys()]);
    const close = closestMatches(name, names);
    const hint = close.length > 0 ? `did you mean ${close.join(", ")}? ` : "";
    throw new ProviderNotFoundError(
      `unknown provider "${name}"; ${hint}run \`svc provider list\` to see them all, or \`svc provider register <file>\` to add one`,
    );
  }

  /**
   * Validates and stores a custom definition. An existing name (custom or bundled) needs `force`;
   * nothing is stored when the definition is invalid.
   */
  async register(definition: unknown, options: { force: boolean; now: Date }): Promise<RegisterResult> {
    const json = JSON.stringify(definition);
    if (Buffer.byteLength(json) > MAX_DEFINITION_BYTES) {
      throw new InvalidInputError(
        `invalid provider definition: larger than ${MAX_DEFINITION_BYTES / 1024} KiB`,
      );
    }
    const parsed = parseProviderDefinition(definition);
    const provider: Provider = { ...parsed, source: "custom" };
    const overridesBundled = this.#bundled.has(parsed.name);
    const exists = overridesBundled || this.#custom.has(parsed.name);
    if (exists && !options.force) {
      throw new ProviderAlreadyRegisteredError(
        `a ${overridesBundled && !this.#custom.has(parsed.name) ? "bundled" : "custom"} provider named "${parsed.name}" already exists; register with force to replace it`,
      );
    }
    let created: boolean;
    if (options.force) {
      created = await this.#repository.upsert(parsed.name, json, options.now);
    } else {
      created = await this.#repository.insertIfAbsent(parsed.name, json, options.now);
      if (!created) {
        throw new ProviderAlreadyRegisteredError(
          `a custom provider named "${parsed.name}" was registered meanwhile; register with force to replace it`,
        );
      }
    }
    this.#custom.set(parsed.name, provider);
    this.#rebuild();
    await this.#notices.announce(parsed.name);
    return { provider, created, overridesBundled };
  }

  /** Removes a custom provider, or resets a bundled one to its shipped form. */
  async remove(name: string): Promise<"removed" | "reset" | "unchanged"> {
    this.get(name);
    const deleted = await this.#repository.delete(name);
    const wasCustom = this.#custom.delete(name) || deleted;
    if (wasCustom) {
      this.#rebuild();
      await this.#notices.announce(name);
    }
    if (this.#bundled.has(name)) return wasCustom ? "reset" : "unchanged";
    return "removed";
  }

  /** The `providers` readiness check: every bundled and custom definition parses. */
  check(): { ok: boolean; issue?: string } {
    const issues = [...(this.#bundledIssue ? [this.#bundledIssue] : []), ...this.#customIssues];
    return issues.length === 0 ? { ok: true } : { ok: false, issue: issues.join("; ") };
  }

  /** Custom providers overriding bundled ones (a readiness warning, not an issue). */
  warnings(): string[] {
    return [...this.#custom.keys()]
      .filter((name) => this.#bundled.has(name))
      .map(
        (name) =>
          `the custom provider "${name}" overrides the bundled one; \`svc provider remove ${name}\` restores it`,
      );
  }
}
