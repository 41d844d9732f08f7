import { Code, ConnectError, createContextValues, type HandlerContext } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { toConnectError } from '../../../control-plane/http/rpc.js';
import { createLogger } from '../../../shared/logger.js';

const logger = createLogger({ level: 'silent' });

function ctxWith(signal: AbortSignal): HandlerContext {
  return { signal, values: createContextValues(), requestHeader: new Headers() } as unknown as HandlerContext;
}

describe('toConnectError on an aborted call', () => {
  it('an expired deadline stays DEADLINE_EXCEEDED (it was reported as cancelled by the client)', () => {
    const ac = new AbortController();
    ac.abort(new ConnectError('the operation timed out', Code.DeadlineExceeded));
    const err = toConnectError(new Error('query aborted'), logger, ctxWith(ac.signal));
    expect(err.code).toBe(Code.DeadlineExceeded);
  });

  it('a client that left is CANCELED, whatever reason the transport gave (a stream reset is Internal there)', () => {
    const ac = new AbortController();
    ac.abort();
    expect(toConnectError(new Error('query aborted'), logger, ctxWith(ac.signal)).code).toBe(Code.Canceled);
    const reset = new AbortController();
    reset.abort(new ConnectError('http/2 stream closed with error code INTERNAL_ERROR', Code.Internal));
    expect(toConnectError(new Error('query aborted'), logger, ctxWith(reset.signal)).code).toBe(Code.Canceled);
  });
});
