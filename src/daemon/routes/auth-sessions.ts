import type { FastifyReply, FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  AuthSessionSchema,
  type CreateAuthSession,
  CreateAuthSessionSchema,
  type SessionInput,
  SessionInputSchema,
  SessionParamsSchema,
  SessionWaitQuerySchema,
} from "../../api/auth-sessions.ts";
import { DEFAULT_CONNECTION } from "../../api/connections.ts";
import { errorResponses } from "../../api/errors.ts";
import { AUDIT_EVENTS } from "../../audit/events.ts";
import {
  ConnectionAlreadyExistsError,
  InvalidInputError,
  SvcError,
  UnexpectedError,
} from "../../core/errors.ts";
import { checkApiKey } from "../../flows/api-key.ts";
import { parseAwsCredentials } from "../../flows/aws-credentials.ts";
import { expandScopePresets, type Provider } from "../../providers/schema.ts";
import type { DaemonContext } from "../context.ts";
import { sendApiKeyForm } from "../pages/api-key-form.ts";
import { sendClientCredentialsForm, sendContinuePage } from "../pages/client-credentials-form.ts";
import { sendDevicePage } from "../pages/device-page.ts";
import { sendOutcomePage } from "../pages/html.ts";
import { assertSameOrigin, daemonBaseUrl } from "../plugins/browser-auth.ts";
import { type AuthSessionState, returnHint, sessionClosed, sessionView } from "../services/auth-sessions.ts";
import { callerScope } from "../services/caller-scope.ts";
import type { ConnectionRecord, StoredCredential } from "../services/connections.ts";

const errors = errorResponses(400, 401, 403, 404, 409);
const tags = ["auth sessions"];

/** What a pasted key becomes: an API key, or an AWS key pair (JSON or KEY=value lines). */
function pastedCredential(provider: Provider, raw: string): StoredCredential {
  if (provider.auth_type !== "aws_sigv4") return { type: "api_key", api_key: checkApiKey(provider, raw) };
  const aws = parseAwsCredentials(raw);
  return { type: "aws_sigv4", ...aws };
}

/** Auth sessions: create, read (with long poll), and the browser bridge for API keys. */
export function authSessionRoutes(context: DaemonContext): FastifyPluginAsyncZod {
  const { authSessions, oauthLogins } = context;

  /** Stores the key a session collected; the session completes, or fails when it cannot be stored. */
  async function submitApiKey(session: AuthSessionState, provider: Provider, raw: string): Promise<void> {
    if (session.waitingFor !== "api_key") throw sessionClosed(session);
    const credential = pastedCredential(provider, raw);
    const secrets =
      credential.type === "api_key"
        ? [credential.api_key]
        : credential.type === "aws_sigv4"
          ? [credential.secret_access_key, ...(credential.session_token ? [credential.session_token] : [])]
          : [];
    await authSessions.processing(session, "api_key");
    const now = context.now().toISOString();
    const record: ConnectionRecord = {
      provider: provider.name,
      connection: session.connection,
      auth_type: provider.auth_type,
      flow: "api_key",
      created_at: now,
      updated_at: now,
      credential,
    };
    const actor = { identity: session.owner.handle, principal_id: session.owner.principalId };
    const subject = { provider: provider.name, connection: session.connection };
    try {
      await context.connections.save(session.owner.vaultId, record, { overwrite: session.force });
    } catch (raw) {
      const error = raw instanceof SvcError ? raw : new UnexpectedError("the key could not be stored");
      await authSessions.fail(session, error);
      await context.audit.record(
        {
          event: AUDIT_EVENTS.providerLoginFailed,
          status: "failure",
          ...actor,
          ...subject,
          detail: { flow: "api_key", via: session.via, reason: error.errorName },
        },
        { secrets },
      );
      throw error;
    }
    await authSessions.complete(session);
    await context.audit.record(
      {
        event: AUDIT_EVENTS.providerLogin,
        status: "success",
        ...actor,
        ...subject,
        detail: { flow: "api_key", via: session.via },
      },
      { secrets },
    );
  }

  /** Starts a login for the caller: checks the flow and the name, then waits for its first step. */
  async function startSession(
    request: FastifyRequest,
    body: CreateAuthSession,
    via: AuthSessionState["via"],
  ): Promise<AuthSessionState> {
    const scope = await callerScope(context, request);
    const provider = context.providers.get(body.provider);
    const flow = body.flow ?? provider.flow;
    const flows = await oauthLogins.offeredFlows(provider, body.base_url, flow);
    if (!flows.includes(flow)) {
      throw new InvalidInputError(
        `${provider.name} cannot log in with the ${flow} flow; it supports ${flows.join(", ")}`,
      );
    }
    const connection = body.connection ?? DEFAULT_CONNECTION;
    // An agent with a scope adds or replaces only connections it may use.
    await scope.guard.assertAllowed(provider.name, connection);
    const force = body.force ?? false;
    if (!force && (await context.connections.find(scope.vaultId, provider.name, connection))) {
      throw new ConnectionAlreadyExistsError(
        `${provider.name} already has a connection "${connection}"; log in with --force to replace it, or pick another --connection name`,
      );
    }
    const session = await authSessions.create({
      owner: { handle: scope.caller.handle, principalId: scope.principal.id, vaultId: scope.vaultId },
      provider: provider.name,
      connection,
      flow,
      force,
      via,
      ...(body.scopes ? { scopes: expandScopePresets(provider.oauth, body.scopes) } : {}),
      ...(body.base_url ? { baseUrl: body.base_url.replace(/\/+$/, "") } : {}),
      daemonUrl: daemonBaseUrl(context, request),
    });
    if (flow === "api_key") await authSessions.waitFor(session, "api_key");
    else await oauthLogins.begin(session, provider);
    return session;
  }

  return async (app) => {
    app.post(
      "/api/auth/sessions",
      {
        schema: {
          summary: "Start a login for a provider",
          description:
            "API key: the session waits for the key (open `next.url`, or post `{api_key}` to `/input` as the same identity). OAuth: `next.url` is the provider's sign-in (PKCE, DCR + PKCE), the device page (device code), or first the input page for the OAuth client when the provider publishes none.",
          tags,
          security: [{ pop: [] }],
          body: CreateAuthSessionSchema,
          response: { 201: AuthSessionSchema, ...errors },
        },
      },
      async (request, reply) => {
        const session = await startSession(request, request.body, request.body.via ?? "login");
        return reply.code(201).send(sessionView(session));
      },
    );

    app.post(
      "/api/auth/providers/:provider_name/connect",
      {
        config: { browser: true },
        schema: {
          summary: "Start a login from the dashboard (session cookie and CSRF token, or PoP)",
          description:
            "The same session as `POST /api/auth/sessions` for the provider in the path; the page opens `next.url` and watches the session.",
          tags,
          security: [{ pop: [] }],
          params: z.object({ provider_name: z.string().min(1).max(64) }),
          body: CreateAuthSessionSchema.omit({ provider: true, via: true }).optional(),
          response: { 201: AuthSessionSchema, ...errors },
        },
      },
      async (request, reply) => {
        const body = { ...request.body, provider: request.params.provider_name };
        const session = await startSession(request, body, "dashboard");
        return reply.code(201).send(sessionView(session));
      },
    );

    app.get(
      "/api/auth/sessions/:session_id",
      {
        config: { browser: true },
        schema: {
          summary: "A session's status (only for the identity that started it)",
          description:
            "`wait=N` holds the answer up to N seconds (at most 30) until the session changes; with `after=<revision>` it answers at once when the session changed since that revision.",
          tags,
          security: [{ pop: [] }],
          params: SessionParamsSchema,
          querystring: SessionWaitQuerySchema,
          response: { 200: AuthSessionSchema, ...errors },
        },
      },
      async (request) => {
        const handle = request.caller!.handle;
        const session = await authSessions.forOwner(request.params.session_id, handle);
        const { wait, after } = request.query;
        if (wait) await authSessions.waitForChange(session, wait * 1000, after);
        return sessionView(session);
      },
    );

    app.post(
      "/api/auth/sessions/:session_id/cancel",
      {
        config: { browser: true },
        schema: {
          summary: "Cancel a session that has not finished (only the identity that started it)",
          description: "Its browser link stops working; a finished session is left as it is.",
          tags,
          security: [{ pop: [] }],
          params: SessionParamsSchema,
          body: z.unknown().optional(),
          response: { 200: AuthSessionSchema, ...errors },
        },
      },
      async (request) => {
        const session = await authSessions.forOwner(request.params.session_id, request.caller!.handle);
        await authSessions.cancel(session);
        return sessionView(session);
      },
    );

    app.post(
      "/api/auth/sessions/:session_id/resume",
      {
        schema: {
          summary: "Continue a paused session (only the identity that started it)",
          description:
            "A session `pending` for OAuth client credentials goes on once a client is stored for the provider; any other open session is answered as it is.",
          tags,
          security: [{ pop: [] }],
          params: SessionParamsSchema,
          body: z.unknown().optional(),
          response: { 200: AuthSessionSchema, ...errors },
        },
      },
      async (request) => {
        const session = await authSessions.forOwner(request.params.session_id, request.caller!.handle);
        if (!authSessions.isOpen(session)) throw sessionClosed(session);
        await oauthLogins.resume(session, context.providers.get(session.provider));
        return sessionView(session);
      },
    );

    // Both pages show where the session stands, so a reload after the step moved on still helps.
    const pages = [
      ["input", "Browser form for an API key or OAuth client credentials (the link svc printed)"],
      ["device", "Device code page: the code to enter and where (the link svc printed)"],
    ] as const;
    for (const [page, summary] of pages) {
      app.get(
        `/api/auth/sessions/:session_id/${page}`,
        {
          config: { auth: "none" },
          schema: { summary, tags, params: SessionParamsSchema, querystring: BridgeQuerySchema },
        },
        async (request, reply) =>
          browserPage(reply, async () => {
            const session = await authSessions.forBrowser(request.params.session_id, request.query.token);
            return sendSessionPage(reply, session, context.providers.get(session.provider));
          }),
      );
    }

    app.post(
      "/api/auth/sessions/:session_id/input",
      {
        config: { auth: "pop-if-present" },
        schema: {
          summary:
            "Submit an API key or OAuth client credentials: the browser form, or JSON from the identity that started the session",
          tags,
          params: SessionParamsSchema,
          // One shape for both callers: a PoP caller sends the values; a browser form also sends
          // `token` and `csrf`, whose absence the handler reports as such.
          body: SessionInputSchema.extend({
            token: z
              .string()
              .max(128)
              .optional()
              .describe("Browser form only: the bridge token of the link."),
            csrf: z.string().max(128).optional().describe("Browser form only: the form's CSRF token."),
          }),
          response: { 200: AuthSessionSchema, ...errors },
        },
      },
      async (request, reply) => {
        const { session_id: id } = request.params;
        const body = request.body;
        if (request.caller) {
          const session = await authSessions.forOwner(id, request.caller.handle);
          await submitInput(session, context.providers.get(session.provider), body);
          return sessionView(session);
        }
        return browserPage(reply, async () => {
          assertSameOrigin(context, request);
          const session = await authSessions.forBrowser(id, body.token);
          authSessions.checkCsrf(session, body.csrf);
          const provider = context.providers.get(session.provider);
          try {
            await submitInput(session, provider, body);
          } catch (error) {
            // Input in the wrong shape: the form again, with the reason as the error.
            if (error instanceof InvalidInputError && authSessions.isOpen(session)) {
              return sendSessionPage(reply, session, provider, error.message, 400);
            }
            throw error;
          }
          return sendSessionPage(reply, session, provider);
        });
      },
    );
  };

  /** The input a session waits for: an API key, or the OAuth client the flow needs. */
  async function submitInput(
    session: AuthSessionState,
    provider: Provider,
    body: SessionInput,
  ): Promise<void> {
    if (session.waitingFor === "client_credentials") {
      await oauthLogins.provideClient(session, provider, body);
      return;
    }
    await submitApiKey(session, provider, body.api_key ?? "");
  }
}

const BridgeQuerySchema = z.object({ token: z.string().max(128).optional() });

/** The page for where a session stands: its form, the way on, or how it ended. */
function sendSessionPage(
  reply: FastifyReply,
  session: AuthSessionState,
  provider: Provider,
  error?: string,
  status?: number,
): FastifyReply {
  switch (session.waitingFor) {
    case "api_key":
      return sendApiKeyForm(reply, session, provider, error, status);
    case "client_credentials":
      return sendClientCredentialsForm(reply, session, provider, error, status);
    case "authorization":
      return sendContinuePage(reply, provider, session.oauth!.authorizationUrl!);
    case "device_code":
      return sendDevicePage(reply, session, provider);
  }
  if (session.status === "completed") {
    return sendOutcomePage(reply, 200, {
      ok: true,
      title: `${provider.display_name} connected`,
      message: `The ${session.flow === "api_key" ? "key" : "sign-in"} is stored encrypted as connection "${session.connection}". ${returnHint(session)}`,
    });
  }
  if (session.status === "processing") {
    return sendOutcomePage(reply, 200, {
      ok: true,
      title: "Finishing the login",
      message: `svc is storing the credentials. ${returnHint(session)}`,
    });
  }
  throw sessionClosed(session);
}

/** Runs a browser page handler; failures become a readable page instead of JSON. */
async function browserPage(reply: FastifyReply, render: () => FastifyReply | Promise<FastifyReply>) {
  try {
    return await render();
  } catch (raw) {
    const error = raw instanceof SvcError ? raw : new UnexpectedError("something went wrong");
    return sendOutcomePage(reply, error.httpStatus, {
      ok: false,
      title: "This login cannot continue",
      message: error.message,
    });
  }
}
