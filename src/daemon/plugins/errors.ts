import type { FastifyError, FastifyInstance } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { InvalidInputError, NotFoundError, SvcError, UnexpectedError } from "../../core/errors.ts";

/** Every failure leaves the daemon as `{error, message}` with the catalogue's HTTP status. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler(async (request, reply) => {
    const error = new NotFoundError(`no route ${request.method} ${request.url.split("?")[0]}`);
    return reply.code(error.httpStatus).send(error.toBody());
  });

  app.setErrorHandler(async (raw: FastifyError | SvcError, request, reply) => {
    const error = toSvcError(raw);
    if (error.httpStatus >= 500) request.log.error({ err: raw }, "request failed");
    return reply.code(error.httpStatus).send(error.toBody());
  });
}

function toSvcError(error: FastifyError | SvcError): SvcError {
  if (error instanceof SvcError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const details = error.validation
      .map(
        (issue) =>
          `${issue.instancePath.replace(/^\//, "").replaceAll("/", ".") || "body"}: ${issue.message}`,
      )
      .join("; ");
    return new InvalidInputError(
      `invalid request ${error.validationContext ?? ""}: ${details}`.replace("  ", " "),
    );
  }
  const status = (error as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) return new InvalidInputError(error.message);
  return new UnexpectedError("the daemon hit an unexpected error; see `svc daemon logs`");
}
