/** shared/errors.ts: which Connect / gRPC code each REST error travels as (API conventions). */
import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { AppError, alreadyExists, conflict, connectCodeFor, invalid, notFound } from '../../../shared/errors.js';

describe('connectCodeFor', () => {
  it('a 409 by meaning: taken -> ALREADY_EXISTS, a full limit -> RESOURCE_EXHAUSTED, a state -> FAILED_PRECONDITION', () => {
    expect(connectCodeFor(alreadyExists('an agent with this id already exists'))).toBe(Code.AlreadyExists);
    expect(connectCodeFor(conflict('tool name taken', 'TOOL_NAME_TAKEN'))).toBe(Code.AlreadyExists);
    expect(connectCodeFor(conflict('email is already registered', 'EMAIL_TAKEN'))).toBe(Code.AlreadyExists);
    expect(connectCodeFor(conflict('the workspace already has 20 QA rubrics', 'LIMIT_REACHED'))).toBe(Code.ResourceExhausted);
    expect(connectCodeFor(new AppError('CONNECTOR_NOT_CONNECTED', 'connect hubspot first'))).toBe(Code.FailedPrecondition);
    expect(connectCodeFor(conflict('agent has no published version'))).toBe(Code.FailedPrecondition);
    // Whatever the code, REST keeps its 409.
    for (const e of [alreadyExists('x'), conflict('y', 'LIMIT_REACHED'), conflict('z')]) expect(e.status).toBe(409);
  });

  it('other statuses as before', () => {
    expect(connectCodeFor(invalid('name', 'is required'))).toBe(Code.InvalidArgument);
    expect(connectCodeFor(notFound('agent'))).toBe(Code.NotFound);
    expect(connectCodeFor(new AppError('RATE_LIMITED', 'slow down'))).toBe(Code.ResourceExhausted);
    expect(connectCodeFor(new AppError('PAYLOAD_TOO_LARGE', 'too big'))).toBe(Code.ResourceExhausted);
    expect(connectCodeFor(new AppError('SERVICE_UNAVAILABLE', 'later'))).toBe(Code.Unavailable);
  });
});
