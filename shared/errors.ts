/**
 * One error model with stable codes (one error model), mapped only at the edges:
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
  /** A connector's OAuth grant lacks the scope of an action or resource (spec doc 1 behaviour 6): 403 with `needs_scope` + `reconnect_products`. */
  | 'NEEDS_SCOPE'
  | 'FILE_TOO_LARGE'
  | 'MISSING_PROVIDER'
  /** A tenant URL points at an address the outbound policy refuses (shared/outbound). */
  | 'OUTBOUND_REFUSED'
  // A count limit (tools per agent, keys per user, ...) is full; enforced in the database (migration 0004).
  | 'LIMIT_REACHED'
  // The embedded PostgreSQL (no DATABASE_URL) cannot start; `details[0].problem` says why (control-plane/db/embedded.ts).
  | 'EMBEDDED_DB'
  // Webhooks (spec doc 3): five test pings still un-sent; delivery switched off on the service side.
  | 'TEST_LIMIT'
  | 'WEBHOOKS_UNAVAILABLE'
  // Human agent portal (spec doc 3 "Errors"): bad attendance dates, a used/expired reset token,
  // credentials for an agent without email, mail not configured.
  | 'INVALID_PARAM'
  | 'INVALID_TOKEN'
  | 'NO_EMAIL'
  | 'SMTP_DISABLED'
  // The portal's 502 (spec doc 3 "Errors"): a service it relies on (the mail server) refused or was unreachable.
  | 'UPSTREAM_UNAVAILABLE';

export interface FieldProblem {
  field: string;
  problem: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: {
      details?: FieldProblem[];
      retryAfterS?: number;
      status?: number;
      cause?: unknown;
      /** A 409 that says the row already exists (a name, number or chosen id is taken): gRPC ALREADY_EXISTS; other 409s are FAILED_PRECONDITION. */
      exists?: boolean;
      /** Extra top-level fields of a `{detail}`-family error body (NEEDS_SCOPE's `reconnect_products`). */
      body?: Record<string, unknown>;
      /** An INTERNAL the contract prescribes for a deployment's configuration, not a bug: logged as a warning, without a stack. */
      configured?: boolean;
    } = {},
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
  NEEDS_SCOPE: 403,
  FILE_TOO_LARGE: 400,
  MISSING_PROVIDER: 400,
  OUTBOUND_REFUSED: 400,
  LIMIT_REACHED: 409,
  EMBEDDED_DB: 500,
  TEST_LIMIT: 429,
  WEBHOOKS_UNAVAILABLE: 503,
  INVALID_PARAM: 400,
  INVALID_TOKEN: 400,
  NO_EMAIL: 400,
  SMTP_DISABLED: 503,
  UPSTREAM_UNAVAILABLE: 502,
};

const CONNECT_BY_STATUS: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
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

/**
 * 409s by meaning (API conventions: ALREADY_EXISTS / FAILED_PRECONDITION, RESOURCE_EXHAUSTED):
 * a taken name or id exists, a full count limit is exhausted, anything else is a state the
 * request does not fit (not published, already transferred, final, ...).
 */
const CONNECT_BY_CONFLICT: Partial<Record<ErrorCode, Code>> = {
  TOOL_NAME_TAKEN: Code.AlreadyExists,
  PHONE_NUMBER_TAKEN: Code.AlreadyExists,
  EMAIL_TAKEN: Code.AlreadyExists,
  LIMIT_REACHED: Code.ResourceExhausted,
};

export function connectCodeFor(err: AppError): Code {
  if (err.status === 409) return CONNECT_BY_CONFLICT[err.code] ?? (err.options.exists ? Code.AlreadyExists : Code.FailedPrecondition);
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

/** A 409 because the row already exists (gRPC ALREADY_EXISTS): a taken name, code or chosen id. */
export function alreadyExists(message: string, code: ErrorCode = 'CONFLICT'): AppError {
  return new AppError(code, message, { exists: true });
}

/**
 * A Node system error (`ENOTFOUND`, `ETIMEDOUT`, ...) raised by our own code where a Node API
 * contract expects one: a custom DNS `lookup`, a socket destroyed by our watchdog. Undici,
 * postgres.js and `dependencyUnavailable` below read these `code`s, so they are not AppErrors;
 * this is the one way to make them (no ad-hoc `Object.assign(new Error(...), { code })`).
 */
export function systemError(code: string, message: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(message);
  err.code = code;
  return err;
}

/** Normalises anything thrown into an AppError; unknown errors become INTERNAL (logged by the edge). */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ConnectError) {
    const status = statusForConnectCode(err.code);
    const code = (Object.entries(STATUS_BY_CODE).find(([, s]) => s === status)?.[0] ?? 'INTERNAL') as ErrorCode;
    return new AppError(code, err.rawMessage, { status });
  }
  // SQLSTATE raised by the row-limit trigger (control-plane/db/migrations/0004_hardening.ts).
  if ((err as { code?: unknown } | null)?.code === LIMIT_SQLSTATE) return new AppError('LIMIT_REACHED', (err as Error).message, { cause: err });
  const unavailable = dependencyUnavailable(err);
  if (unavailable) return unavailable;
  return new AppError('INTERNAL', 'internal error', { cause: err });
}

/**
 * A dependency (Postgres, a socket) that is down, restarting, overloaded or too slow is a
 * retryable 503 with Retry-After, never a 500: the one place these errors are recognised
 * (REST and Connect/gRPC both come through toAppError).
 */
const DB_UNAVAILABLE_CODES = new Set([
  // Sockets (postgres.js passes them through; ETIMEDOUT is also its response watchdog, db/client.ts).
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  // postgres.js connection states.
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  // SQLSTATE: connection exceptions, too many connections, admin/crash shutdown, cannot connect now.
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
  '57P01',
  '57P02',
  '57P03',
]);
/** SQLSTATE query_canceled: here always `statement_timeout` (queries are never cancelled otherwise). */
const STATEMENT_TIMEOUT_SQLSTATE = '57014';

function dependencyUnavailable(err: unknown): AppError | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (code === STATEMENT_TIMEOUT_SQLSTATE) return new AppError('SERVICE_UNAVAILABLE', 'database query timed out', { cause: err, retryAfterS: 1 });
  if (DB_UNAVAILABLE_CODES.has(code)) return new AppError('SERVICE_UNAVAILABLE', 'database unavailable', { cause: err, retryAfterS: 1 });
  return undefined;
}

/** SQLSTATE of a full count limit (the database trigger raises it). */
export const LIMIT_SQLSTATE = 'VPL01';
