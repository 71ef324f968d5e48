import type { FastifyInstance } from "fastify";

/** Browser forms are small: an API key or a client id and secret. */
export const MAX_FORM_BYTES = 16 * 1024;

/** Parses `application/x-www-form-urlencoded` bodies (the bridge forms, which work without JavaScript). */
export function registerFormBody(app: FastifyInstance): void {
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: MAX_FORM_BYTES },
    (_request, body: string, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body)));
    },
  );
}
