/**
 * One error model with stable codes (house style rule 3), mapped only at the edges:
 * HTTP status for REST, Connect/gRPC code for RPC, an error frame on sockets.
 */
import { Code, ConnectError } from '@connectrpc/connect';

export type ErrorCode =
  | 'INVALID_BODY'
  | 'INVALID_REQUEST'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'PAYLOAD_TOO_LARGE'
  | 'SERVICE_UNAVAILABLE'
  | 'BAD_GATEWAY'
  | 'INTERNAL'
  | 'METHOD_NOT_ALLOWED'
  // Specific codes named by the spec or by a domain.
  | 'TOOL_NAME_TAKEN'
  | 'PHONE_NUMBER_TAKEN'
  | 'EMAIL_TAKEN'
  | 'UNKNOWN_CONNECTOR'
  | 'CONNECTOR_NOT_CONNECTED'
  | 'FILE_TOO_LARGE'
  | 'MISSING_PROVIDER';

export interface FieldProblem {
  field: string;
  problem: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { details?: FieldProblem[]; retryAfterS?: number; status?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
  }
  get details(): FieldProblem[] | undefined {
    return this.options.details;
  }
  get status(): number {
    return this.options.status ?? STATUS_BY_CODE[this.code];
  }
}

const STATUS_BY_CODE: Record<ErrorCode, number> = {
  INVALID_BODY: 400,
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  PAYLOAD_TOO_LARGE: 413,
  SERVICE_UNAVAILABLE: 503,
  BAD_GATEWAY: 502,
  INTERNAL: 500,
  METHOD_NOT_ALLOWED: 405,
  TOOL_NAME_TAKEN: 409,
  PHONE_NUMBER_TAKEN: 409,
  EMAIL_TAKEN: 409,
  UNKNOWN_CONNECTOR: 404,
  CONNECTOR_NOT_CONNECTED: 409,
  FILE_TOO_LARGE: 400,
  MISSING_PROVIDER: 400,
};

const CONNECT_BY_STATUS: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  409: Code.AlreadyExists,
  413: Code.ResourceExhausted,
  429: Code.ResourceExhausted,
  500: Code.Internal,
  502: Code.Unavailable,
  503: Code.Unavailable,
};

const STATUS_BY_CONNECT: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.FailedPrecondition]: 409,
  [Code.ResourceExhausted]: 429,
  [Code.Unavailable]: 503,
  [Code.Unimplemented]: 501,
  [Code.DeadlineExceeded]: 504,
  [Code.Canceled]: 499,
};

export function connectCodeFor(err: AppError): Code {
  return CONNECT_BY_STATUS[err.status] ?? Code.Unknown;
}

export function statusForConnectCode(code: Code): number {
  return STATUS_BY_CONNECT[code] ?? 500;
}

export function invalid(field: string, problem: string): AppError {
  return new AppError('INVALID_REQUEST', `${field}: ${problem}`, { details: [{ field, problem }] });
}

export function notFound(what: string): AppError {
  return new AppError('NOT_FOUND', `${what} not found`);
}

export function forbidden(message = 'forbidden'): AppError {
  return new AppError('FORBIDDEN', message);
}

export function unauthorized(message = 'missing or invalid credentials'): AppError {
  return new AppError('UNAUTHORIZED', message);
}

export function conflict(message: string, code: ErrorCode = 'CONFLICT'): AppError {
  return new AppError(code, message);
}

/** Normalises anything thrown into an AppError; unknown errors become INTERNAL (logged by the edge). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ConnectError) {
    const status = statusForConnectCode(err.code);
    const code = (Object.entries(STATUS_BY_CODE).find(([, s]) => s === status)?.[0] ?? 'INTERNAL') as ErrorCode;
    return new AppError(code, err.rawMessage, { status });
  }
  return new AppError('INTERNAL', 'internal error', { cause: err });
}
