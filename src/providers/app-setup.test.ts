import { describe, expect, it } from "vitest";
import { appSetupSteps } from "./app-setup.ts";
import { loadBundledProviders } from "./catalogue.ts";

const byName = new Map(loadBundledProviders().map((provider) => [provider.name, provider]));
const CALLBACK = "http://127.0.0.1:7998/auth/callback/oauth";

describe("appSetupSteps", () => {
  it("names Slack's registration page, the callback URL and the user token scopes, each ready to copy", () => {
    const slack = byName.get("slack")!;
    const steps = appSetupSteps(slack, { flow: "pkce", callbackUrl: CALLBACK, scopes: slack.oauth!.scopes });
    expect(steps[0]).toEqual({
      text: "Open Slack's app registration page and create a Slack app (From scratch):",
      copy: "https://api.slack.com/apps",
    });
    expect(steps).toContainEqual({ text: "Set the app's callback (redirect) URL to:", copy: CALLBACK });
    expect(steps).toContainEqual({
      text: "Give the app these user token scopes:",
      copy: "channels:read chat:write",
    });
    expect(steps.at(-1)!.text).toMatch(/client ID and client secret/);
  });

  it("asks for no callback in the device flow, and no secret from a public client", () => {
    const github = byName.get("github")!;
    const steps = appSetupSteps(github, { flow: "device_code", callbackUrl: CALLBACK, scopes: [] });
    expect(steps.map((step) => step.copy)).not.toContain(CALLBACK);
    expect(steps.at(-1)!.text).toMatch(/client ID into the form .*no secret/);
  });

  it("falls back to the provider's documentation when it names no registration page", () => {
    const provider = { ...byName.get("zoom")!, oauth: { ...byName.get("zoom")!.oauth! } };
    delete provider.oauth.app_setup;
    const [first] = appSetupSteps(provider, { flow: "pkce", callbackUrl: CALLBACK, scopes: [] });
    expect(first).toEqual({ text: expect.stringMatching(/developer settings/), copy: provider.docs_url });
  });
});
