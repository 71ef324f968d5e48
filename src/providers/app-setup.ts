/**
 * The numbered steps for creating the OAuth app a login needs (no bundled provider can ship a
 * public client): where to register it, which callback URL and scopes to enter, and what to copy
 * back. Shown on the client-credentials page and by `svc login`; values meant to be pasted
 * elsewhere (the callback URL, the scopes) travel separately so each can be shown ready to copy.
 */
import type { Flow, ProviderDefinition } from "./schema.ts";

export interface SetupStep {
  text: string;
  /** A value to paste into the provider's settings, shown on its own. */
  copy?: string;
}

export interface SetupContext {
  flow: Flow;
  /** svc's callback URL for this login. */
  callbackUrl: string;
  /** The scopes this login asks for. */
  scopes: readonly string[];
}

export function appSetupSteps(
  provider: Pick<ProviderDefinition, "display_name" | "docs_url" | "oauth">,
  context: SetupContext,
): SetupStep[] {
  const oauth = provider.oauth;
  const setup = oauth?.app_setup;
  const steps: SetupStep[] = [
    setup
      ? {
          text: `Open ${provider.display_name}'s app registration page and create ${setup.app_type}:`,
          copy: setup.url,
        }
      : {
          text: `Create an OAuth app in ${provider.display_name}'s developer settings, as its documentation describes:`,
          copy: provider.docs_url,
        },
  ];
  // The device flow sends nobody back to svc, so it has no callback to register.
  if (context.flow !== "device_code") {
    steps.push({ text: "Set the app's callback (redirect) URL to:", copy: context.callbackUrl });
  }
  if (context.scopes.length > 0) {
    const kind = oauth?.scope_param === "user_scope" ? "user token scopes" : "scopes";
    steps.push({ text: `Give the app these ${kind}:`, copy: context.scopes.join(" ") });
  }
  for (const text of setup?.steps ?? []) steps.push({ text });
  const needsSecret = oauth?.token_auth_method !== "none";
  steps.push({
    text: needsSecret
      ? "Copy the app's client ID and client secret into the form svc opened."
      : "Copy the app's client ID into the form svc opened (a public client has no secret).",
  });
  return steps;
}
