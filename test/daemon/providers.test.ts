import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Readiness } from "../../src/api/health.ts";
import type { RegisteredProvider, RemovedProvider } from "../../src/api/providers.ts";
import {
  InvalidInputError,
  OperationNotAllowedError,
  ProviderAlreadyRegisteredError,
  ProviderNotFoundError,
} from "../../src/core/errors.ts";
import { loadBundledProviders } from "../../src/providers/catalogue.ts";
import type { Provider, ProviderSummary } from "../../src/providers/schema.ts";
import {
  customProvider,
  loginWithApiKey,
  signedFetch,
  startTestDaemon,
  type TestDaemon,
} from "../support/daemon.ts";

let t: TestDaemon;
beforeAll(async () => {
  t = await startTestDaemon();
});
afterAll(async () => {
  await t.stop();
});

const list = () => t.client.get<ProviderSummary[]>("/api/providers");
const get = (name: string) => t.client.get<Provider>(`/api/providers/${name}`);
const remove = (name: string) => t.client.request<RemovedProvider>("DELETE", `/api/providers/${name}`);
const register = (definition: unknown, force = false) =>
  signedFetch<RegisteredProvider & { error?: string; message?: string }>(
    t.daemon.url,
    t.identity,
    "POST",
    `/api/providers${force ? "?force=true" : ""}`,
    definition,
  );

describe("GET /api/providers", () => {
  it("lists every bundled provider with exactly the summary fields", async () => {
    const providers = await list();
    expect(providers.length).toBeGreaterThanOrEqual(100);
    for (const provider of providers) {
      expect(Object.keys(provider).sort()).toEqual(["auth_type", "display_name", "flow", "name", "source"]);
    }
    expect(providers).toContainEqual({
      name: "openai",
      display_name: "OpenAI",
      auth_type: "api_key",
      flow: "api_key",
      source: "bundled",
    });
    const names = providers.map((provider) => provider.name);
    expect(names).toEqual([...names].sort());
    expect(new Set(names).size).toBe(names.length);
  });

  it("returns a provider's full definition, defaults applied", async () => {
    const openai = await get("openai");
    const bundled = loadBundledProviders().find((provider) => provider.name === "openai")!;
    expect(openai).toEqual({ ...bundled, source: "bundled" });
    expect(openai).toMatchObject({
      api_url: "api.openai.com",
      api_key: { header_name: "Authorization", header_prefix: "Bearer", env_var: "OPENAI_API_KEY" },
      docs_url: expect.stringMatching(/^https:\/\//),
    });
  });

  it("answers an unknown name with ProviderNotFoundError and a did-you-mean hint", async () => {
    const error = await get("opnai").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProviderNotFoundError);
    expect((error as Error).message).toMatch(/unknown provider "opnai"; did you mean [^?]*\bopenai\b/);
    const raw = await signedFetch(t.daemon.url, t.identity, "GET", "/api/providers/opnai");
    expect(raw.status).toBe(404);
  });
});

describe("registering and removing custom providers", () => {
  it("registers a valid definition (201, created) and lists it as custom", async () => {
    const response = await register(customProvider("acme"));
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      created: true,
      overrides_bundled: false,
      provider: { name: "acme", source: "custom", api_key: { header_name: "Authorization" } },
    });
    expect(await list()).toContainEqual({
      name: "acme",
      display_name: "Custom acme",
      auth_type: "api_key",
      flow: "api_key",
      source: "custom",
    });
    expect(await get("acme")).toMatchObject({
      name: "acme",
      source: "custom",
      api_url: "api.acme.example.com",
    });
  });

  it("refuses an invalid definition with 400 naming the field, and stores nothing", async () => {
    const before = await list();
    const response = await register(customProvider("broken", { api_url: "not a host!" }));
    expect(response.status).toBe(400);
    expect(response.body.error).toBe("InvalidInputError");
    expect(response.body.message).toMatch(/api_url: /);

    const missing = { ...customProvider("broken") } as Record<string, unknown>;
    delete missing.docs_url;
    await expect(t.client.post("/api/providers", missing)).rejects.toThrow(/docs_url: is required/);
    await expect(t.client.post("/api/providers", missing)).rejects.toBeInstanceOf(InvalidInputError);

    const withSource = { ...customProvider("broken"), source: "bundled" };
    await expect(t.client.post("/api/providers", withSource)).rejects.toThrow(/source: /);

    await expect(get("broken")).rejects.toBeInstanceOf(ProviderNotFoundError);
    expect(await list()).toEqual(before);
  });

  it("refuses the same name again without force (409), replaces it with force (200)", async () => {
    const again = await register(customProvider("acme", { display_name: "Acme again" }));
    expect(again.status).toBe(409);
    expect(again.body.error).toBe("ProviderAlreadyRegisteredError");
    expect(again.body.message).toMatch(/"acme" already exists.*force/);
    await expect(t.client.post("/api/providers", customProvider("acme"))).rejects.toBeInstanceOf(
      ProviderAlreadyRegisteredError,
    );
    expect((await get("acme")).display_name).toBe("Custom acme");

    const forced = await register(customProvider("acme", { display_name: "Acme Corp" }), true);
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ created: false, provider: { display_name: "Acme Corp" } });
    expect((await get("acme")).display_name).toBe("Acme Corp");
  });

  it("overrides a bundled provider only with force, warns on /api/ready, and resets it on DELETE", async () => {
    const override = customProvider("anthropic", {
      display_name: "Anthropic (proxy)",
      api_url: "anthropic-proxy.example.com",
    });
    const refused = await register(override);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/bundled provider named "anthropic"/);
    expect((await get("anthropic")).source).toBe("bundled");

    const forced = await register(override, true);
    expect(forced.status).toBe(201);
    expect(forced.body).toMatchObject({ created: true, overrides_bundled: true });
    expect(await get("anthropic")).toMatchObject({ source: "custom", display_name: "Anthropic (proxy)" });
    expect((await list()).find((provider) => provider.name === "anthropic")?.source).toBe("custom");

    const ready = await t.client.get<Readiness>("/api/ready");
    expect(ready.status).toBe("ready");
    expect(ready.warnings?.join("\n")).toMatch(/"anthropic" overrides the bundled one/);

    expect(await remove("anthropic")).toEqual({ name: "anthropic", result: "reset" });
    expect(await get("anthropic")).toMatchObject({ source: "bundled", display_name: "Anthropic" });
    expect((await t.client.get<Readiness>("/api/ready")).warnings?.join("\n") ?? "").not.toMatch(/anthropic/);
    expect(await remove("anthropic")).toEqual({ name: "anthropic", result: "unchanged" });
  });

  it("removes a custom provider, after which it is unknown", async () => {
    await register(customProvider("short-lived"));
    expect(await remove("short-lived")).toEqual({ name: "short-lived", result: "removed" });
    await expect(get("short-lived")).rejects.toBeInstanceOf(ProviderNotFoundError);
    await expect(remove("short-lived")).rejects.toBeInstanceOf(ProviderNotFoundError);
    expect((await list()).map((provider) => provider.name)).not.toContain("short-lived");
  });

  it("refuses to remove a custom provider that still has a connection, until it is revoked", async () => {
    await register(customProvider("inuse"));
    await loginWithApiKey(t.client, "inuse", "inuse-key-0123456789");
    const error = await remove("inuse").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OperationNotAllowedError);
    expect((error as Error).message).toMatch(/inuse still has 1 connection; .*revoke inuse/);
    expect((await get("inuse")).source).toBe("custom");

    await t.client.post("/api/connections/inuse/revoke");
    expect(await remove("inuse")).toEqual({ name: "inuse", result: "removed" });
  });

  it("keeps custom providers across a daemon restart on the same home", async () => {
    t = await t.restart();
    expect(await get("acme")).toMatchObject({ name: "acme", source: "custom", display_name: "Acme Corp" });
    expect((await list()).filter((provider) => provider.source === "custom").map((p) => p.name)).toEqual([
      "acme",
    ]);
    expect(await get("anthropic")).toMatchObject({ source: "bundled" });
    expect((await t.client.get<Readiness>("/api/ready")).checks.providers).toBe("ok");
  });
});

describe("provider administration is for admins", () => {
  it("lets a user list and read providers but not register or remove them", async () => {
    const user = await t.newUser();
    expect(await user.client.get<{ principal_role: string }>("/api/whoami")).toMatchObject({
      principal_role: "user",
    });
    expect((await user.client.get<ProviderSummary[]>("/api/providers")).length).toBeGreaterThanOrEqual(100);
    expect(await user.client.get<Provider>("/api/providers/acme")).toMatchObject({ name: "acme" });

    const registerError = await user.client
      .post("/api/providers", customProvider("sneaky"))
      .catch((caught: unknown) => caught);
    expect(registerError).toBeInstanceOf(OperationNotAllowedError);
    expect((registerError as Error).message).toMatch(/only an admin can register providers; .*role is user/);
    await expect(get("sneaky")).rejects.toBeInstanceOf(ProviderNotFoundError);

    const removeError = await user.client
      .request("DELETE", "/api/providers/acme")
      .catch((caught: unknown) => caught);
    expect(removeError).toBeInstanceOf(OperationNotAllowedError);
    expect((removeError as Error).message).toMatch(/only an admin can remove providers/);
    expect((await get("acme")).source).toBe("custom");
  });

  it("refuses an unclaimed identity on register", async () => {
    const stranger = await t.newIdentity({ claim: false });
    await expect(stranger.client.post("/api/providers", customProvider("stray"))).rejects.toBeInstanceOf(
      OperationNotAllowedError,
    );
    await expect(get("stray")).rejects.toBeInstanceOf(ProviderNotFoundError);
  });
});
