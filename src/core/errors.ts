/**
 * The one catalogue of svc errors. Every failure the daemon, the client or the CLI can report is a
 * row here: its class name travels over HTTP as `{error, message}`, its HTTP status is what the
 * daemon answers, and its exit code is what the CLI returns (the spec's exit-code table).
 */
export const ERROR_CATALOGUE = {
  UnexpectedError: { exitCode: 1, httpStatus: 500 },
  AuthenticationFailedError: { exitCode: 2, httpStatus: 401 },
  RateLimitedError: { exitCode: 2, httpStatus: 429 },
  InputCancelledError: { exitCode: 2, httpStatus: 400 },
  InvalidInputError: { exitCode: 2, httpStatus: 400 },
  ConnectionNotFoundError: { exitCode: 3, httpStatus: 404 },
  ProviderNotFoundError: { exitCode: 4, httpStatus: 404 },
  OperationNotAllowedError: { exitCode: 4, httpStatus: 403 },
  NotFoundError: { exitCode: 4, httpStatus: 404 },
  CredentialMissingError: { exitCode: 5, httpStatus: 404 },
  TokenExpiredError: { exitCode: 5, httpStatus: 409 },
  RefreshFailedError: { exitCode: 5, httpStatus: 502 },
  ConnectionAlreadyExistsError: { exitCode: 6, httpStatus: 409 },
  ProviderAlreadyRegisteredError: { exitCode: 7, httpStatus: 409 },
  EndpointUnreachableError: { exitCode: 8, httpStatus: 502 },
  DaemonUnavailableError: { exitCode: 9, httpStatus: 503 },
  VaultUnavailableError: { exitCode: 1, httpStatus: 503 },
  /** A hosted daemon cannot reach the Redis its replicas share: to its clients, it is unavailable. */
  SharedStateUnavailableError: { exitCode: 9, httpStatus: 503 },
} as const satisfies Record<string, { exitCode: number; httpStatus: number }>;

export type ErrorName = keyof typeof ERROR_CATALOGUE;

export interface ErrorBody {
  error: ErrorName;
  message: string;
}

export class SvcError extends Error {
  readonly errorName: ErrorName;
  /** How long the daemon asked the caller to wait before trying again (its Retry-After), if it said. */
  retryAfterSeconds?: number;

  constructor(errorName: ErrorName, message: string, options?: ErrorOptions) {
    super(message, options);
    this.errorName = errorName;
    this.name = errorName;
  }

  get exitCode(): number {
    return ERROR_CATALOGUE[this.errorName].exitCode;
  }

  get httpStatus(): number {
    return ERROR_CATALOGUE[this.errorName].httpStatus;
  }

  toBody(): ErrorBody {
    return { error: this.errorName, message: this.message };
  }
}

function defineError<N extends ErrorName>(errorName: N) {
  const ErrorClass = class extends SvcError {
    constructor(message: string, options?: ErrorOptions) {
      super(errorName, message, options);
    }
  };
  Object.defineProperty(ErrorClass, "name", { value: errorName });
  return ErrorClass;
}

export const UnexpectedError = defineError("UnexpectedError");
export const AuthenticationFailedError = defineError("AuthenticationFailedError");
export const RateLimitedError = defineError("RateLimitedError");
export const InputCancelledError = defineError("InputCancelledError");
export const InvalidInputError = defineError("InvalidInputError");
export const ConnectionNotFoundError = defineError("ConnectionNotFoundError");
export const ProviderNotFoundError = defineError("ProviderNotFoundError");
export const OperationNotAllowedError = defineError("OperationNotAllowedError");
export const NotFoundError = defineError("NotFoundError");
export const CredentialMissingError = defineError("CredentialMissingError");
export const TokenExpiredError = defineError("TokenExpiredError");
export const RefreshFailedError = defineError("RefreshFailedError");
export const ConnectionAlreadyExistsError = defineError("ConnectionAlreadyExistsError");
export const ProviderAlreadyRegisteredError = defineError("ProviderAlreadyRegisteredError");
export const EndpointUnreachableError = defineError("EndpointUnreachableError");
export const DaemonUnavailableError = defineError("DaemonUnavailableError");
export const VaultUnavailableError = defineError("VaultUnavailableError");
export const SharedStateUnavailableError = defineError("SharedStateUnavailableError");

const CLASSES: Record<ErrorName, new (message: string, options?: ErrorOptions) => SvcError> = {
  UnexpectedError,
  AuthenticationFailedError,
  RateLimitedError,
  InputCancelledError,
  InvalidInputError,
  ConnectionNotFoundError,
  ProviderNotFoundError,
  OperationNotAllowedError,
  NotFoundError,
  CredentialMissingError,
  TokenExpiredError,
  RefreshFailedError,
  ConnectionAlreadyExistsError,
  ProviderAlreadyRegisteredError,
  EndpointUnreachableError,
  DaemonUnavailableError,
  VaultUnavailableError,
  SharedStateUnavailableError,
};

export function isErrorName(value: unknown): value is ErrorName {
  return typeof value === "string" && Object.hasOwn(ERROR_CATALOGUE, value);
}

/** Rebuilds the error a daemon sent as `{error, message}`; unknown names become UnexpectedError. */
export function errorFromBody(body: unknown, fallbackMessage: string): SvcError {
  if (body && typeof body === "object") {
    const { error, message } = body as Record<string, unknown>;
    const text = typeof message === "string" && message ? message : fallbackMessage;
    if (isErrorName(error)) return new CLASSES[error](text);
    return new UnexpectedError(text);
  }
  return new UnexpectedError(fallbackMessage);
}
