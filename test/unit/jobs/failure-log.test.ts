/**
 * A failed job's log line: expected failures (our errors, network and timeout errors, however
 * wrapped) are one line with their code; anything else keeps the error and its stack.
 */
import { describe, expect, it } from 'vitest';
import { jobFailureFields } from '../../../control-plane/jobs/index.js';
import { AppError } from '../../../shared/errors.js';

function sysError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('jobFailureFields', () => {
  it('our own errors: message and code, no stack', () => {
    expect(jobFailureFields(new AppError('BAD_GATEWAY', 'webhook answered 500'))).toEqual({ error: 'webhook answered 500', code: 'BAD_GATEWAY' });
  });

  it('a DNS failure wrapped by fetch: the cause code and message', () => {
    const err = new TypeError('fetch failed', { cause: sysError('getaddrinfo ENOTFOUND alerts.invalid', 'ENOTFOUND') });
    expect(jobFailureFields(err)).toEqual({ error: 'fetch failed', code: 'ENOTFOUND', cause: 'getaddrinfo ENOTFOUND alerts.invalid' });
  });

  it('undici and timeout errors', () => {
    expect(jobFailureFields(sysError('Connect Timeout Error', 'UND_ERR_CONNECT_TIMEOUT'))).toMatchObject({ code: 'UND_ERR_CONNECT_TIMEOUT' });
    expect(jobFailureFields(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))).toMatchObject({ code: 'TimeoutError' });
  });

  it('bugs keep the error (its stack): INTERNAL, Node programming errors, plain errors, SQL errors', () => {
    const internal = new AppError('INTERNAL', 'internal error');
    expect(jobFailureFields(internal)).toEqual({ err: internal });
    const badArg = sysError('The "path" argument must be of type string', 'ERR_INVALID_ARG_TYPE');
    expect(jobFailureFields(badArg)).toEqual({ err: badArg });
    const plain = new RangeError('index out of range');
    expect(jobFailureFields(plain)).toEqual({ err: plain });
    const sql = sysError('relation "x" does not exist', '42P01');
    expect(jobFailureFields(sql)).toEqual({ err: sql });
    expect(jobFailureFields('a string')).toEqual({ err: 'a string' });
  });
});
