/**
 * The credential channel (docs/security.md, "The credential channel"): a `svc run` proxy opens one
 * connection with a PoP token, and each request's resolve is then one JSON line instead of a
 * PoP-signed HTTP exchange. The connection is bound to the identity that opened it; every message
 * is resolved exactly as `POST /api/credentials/resolve` would for that identity (its scope
 * included), which is looked up again each time, so a revoked or removed identity is cut off at its
 * next message.
 */
import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import {
  CHANNEL_MAX_LINE_BYTES,
  CHANNEL_PATH,
  CHANNEL_PROTOCOL,
  type ChannelAnswer,
  ChannelRequestSchema,
} from "../../api/credentials.ts";
import { errorResponses } from "../../api/errors.ts";
import {
  AuthenticationFailedError,
  InvalidInputError,
  NotFoundError,
  OperationNotAllowedError,
  SvcError,
} from "../../core/errors.ts";
import type { DaemonContext } from "../context.ts";
import { allowedHosts } from "../plugins/host-guard.ts";
import { bearerToken, type Caller, issuedBeforeStart, verifyCaller } from "../plugins/pop-auth.ts";
import { scopeOf } from "../services/caller-scope.ts";

/** A refusal before the switch, as a plain HTTP response on the raw socket. */
function refuse(socket: Duplex, error: SvcError, headers: string[] = []): void {
  const body = JSON.stringify(error.toBody());
  socket.end(
    [
      `HTTP/1.1 ${error.httpStatus} ${STATUS_CODES[error.httpStatus] ?? ""}`,
      "content-type: application/json",
      `content-length: ${Buffer.byteLength(body)}`,
      "connection: close",
      ...headers,
      "",
      body,
    ].join("\r\n"),
  );
}

function answerOf(id: number, error: unknown): ChannelAnswer {
  // Only svc's own errors cross the wire: anything else could carry internals.
  const svcError = error instanceof SvcError ? error : undefined;
  return {
    id,
    error: {
      error: svcError?.errorName ?? "UnexpectedError",
      message: svcError?.message ?? "the daemon failed to resolve this request",
    },
  };
}

/** Serves one opened channel: reads lines, answers each as it completes (out of order). */
function serve(context: DaemonContext, caller: Caller, socket: Duplex, head: Buffer): void {
  let buffered = head.length > 0 ? head.toString("utf8") : "";
  const send = (answer: ChannelAnswer) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(answer)}\n`);
  };
  const handle = async (line: string) => {
    let id = 0;
    try {
      const parsed = ChannelRequestSchema.safeParse(JSON.parse(line));
      if (!parsed.success) throw new InvalidInputError("not a credential channel message");
      const message = parsed.data;
      id = message.id;
      // Looked up again for every message: a removed or revoked identity is cut off here.
      const identity = await context.identities.lookup(caller.handle).catch((error: unknown) => {
        if (error instanceof AuthenticationFailedError) {
          send(answerOf(id, error));
          socket.end();
          return null;
        }
        throw error;
      });
      if (identity === null) return;
      if (!identity) {
        socket.destroy();
        return;
      }
      const scope = await scopeOf(context, { ...caller, principalId: identity.principalId ?? null });
      const credential = await context.credentials.resolve(
        scope.vaultId,
        message.resolve,
        { identity: caller.handle, principal_id: scope.principal.id },
        scope.guard,
      );
      send({ id, credential });
    } catch (error) {
      send(answerOf(id, error instanceof SyntaxError ? new InvalidInputError("not a JSON message") : error));
    }
  };
  const consume = () => {
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== "") void handle(line);
      newline = buffered.indexOf("\n");
    }
    if (Buffer.byteLength(buffered) > CHANNEL_MAX_LINE_BYTES) socket.destroy();
  };
  socket.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    consume();
  });
  consume();
}

/** Authenticates an upgrade request for the channel and switches it, or refuses it. */
async function open(
  context: DaemonContext,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  allowed: Set<string>,
): Promise<void> {
  const path = request.url ?? "";
  if (path !== CHANNEL_PATH) {
    refuse(socket, new NotFoundError(`no upgrade is served at ${path.slice(0, 100)}`));
    return;
  }
  if (!allowed.has(request.headers.host?.toLowerCase() ?? "")) {
    refuse(socket, new OperationNotAllowedError("this daemon does not answer to that host"));
    return;
  }
  if (request.headers.upgrade?.toLowerCase() !== CHANNEL_PROTOCOL) {
    refuse(socket, new InvalidInputError(`the credential channel speaks ${CHANNEL_PROTOCOL}`));
    return;
  }
  let caller: Caller;
  try {
    const token = bearerToken(request);
    const verified = await verifyCaller(context, token, {
      method: "GET",
      pathAndQuery: path,
      body: Buffer.alloc(0),
    });
    if (issuedBeforeStart(context, verified.claims)) {
      refuse(socket, new AuthenticationFailedError("PoP token was signed before the daemon (re)started"), [
        "retry-after: 1",
      ]);
      return;
    }
    caller = verified.caller;
    // An identity nobody claimed has no vault: refused now rather than at every message.
    await scopeOf(context, caller);
  } catch (error) {
    const svcError =
      error instanceof SvcError ? error : new AuthenticationFailedError("PoP verification failed");
    refuse(socket, svcError);
    return;
  }
  (socket as Partial<Socket>).setNoDelay?.(true);
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${CHANNEL_PROTOCOL}\r\nconnection: Upgrade\r\n\r\n`,
  );
  serve(context, caller, socket, head);
}

/** Serves channel upgrades on the daemon's HTTP server; open channels close with the daemon. */
export function registerCredentialChannel(app: FastifyInstance, context: DaemonContext): void {
  const sockets = new Set<Duplex>();
  let allowed: Set<string> | undefined;
  app.server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    allowed ??= allowedHosts(context.config, request.socket.localPort ?? context.config.port);
    open(context, request, socket, head, allowed).catch(() => socket.destroy());
  });
  app.addHook("preClose", async () => {
    for (const socket of sockets) socket.destroy();
  });
}

/** The channel's HTTP face: its description in the OpenAPI document, and a 400 without an upgrade. */
export function credentialChannelRoute(): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      CHANNEL_PATH,
      {
        schema: {
          summary: "Open the credential channel (Upgrade: svc-resolve/1)",
          description:
            'Send `Connection: Upgrade`, `Upgrade: svc-resolve/1` and a PoP token for `GET /api/credentials/channel`. After `101 Switching Protocols`, each line `{"id":N,"resolve":ResolveRequest}` is answered by a line `{"id":N,"credential":ResolvedCredential}` or `{"id":N,"error":{"error","message"}}`, in completion order. Without an upgrade this route answers 400.',
          tags: ["proxy"],
          security: [{ pop: [] }],
          response: errorResponses(400, 401),
        },
      },
      async () => {
        throw new InvalidInputError(
          `the credential channel needs Connection: Upgrade and Upgrade: ${CHANNEL_PROTOCOL}`,
        );
      },
    );
  };
}
