import type { FastifyInstance } from "fastify";
import { InvalidInputError } from "../../core/errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The exact body bytes, for the PoP token's `body_sha256`. */
    rawBody?: Buffer;
  }
}

export const MAX_BODY_BYTES = 1024 * 1024;

/** Parses JSON bodies while keeping the exact bytes the PoP signature covers. */
export function registerRawBodyJson(app: FastifyInstance): void {
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser(
    "application/json",
    { parseAs: "buffer", bodyLimit: MAX_BODY_BYTES },
    (request, body: Buffer, done) => {
      request.rawBody = body;
      if (body.length === 0) return done(null, undefined);
      try {
        done(null, JSON.parse(body.toString("utf8")));
      } catch {
        done(new InvalidInputError("the request body is not valid JSON"), undefined);
      }
    },
  );
}
