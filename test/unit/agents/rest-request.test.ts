import { describe, expect, it } from 'vitest';
import { restRequest } from '../../../control-plane/agents/rest-request.js';
import { CreateToolRequestSchema, PutFlowRequestSchema } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { AppError } from '../../../shared/errors.js';

const parts = (body: unknown, params: Record<string, string> = {}, query: Record<string, string> = {}) => ({ body, params, query, headers: new Headers() });
const failField = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return [(e as AppError).code, (e as AppError).details?.[0]?.field];
  }
  return undefined;
};

describe('restRequest', () => {
  const tool = restRequest(CreateToolRequestSchema);
  it('merges query, body and params (params win)', () => {
    expect(tool(parts({ name: 'x', agent_id: 'body' }, { agent_id: 'path' }))).toEqual({ name: 'x', agent_id: 'path' });
  });
  it('names the path of an object field of the wrong kind', () => {
    expect(failField(() => tool(parts({ function_schema: 'x' })))).toEqual(['INVALID_REQUEST', 'function_schema']);
    expect(failField(() => tool(parts({ connector_binding: { actions: [{ parameters: [] }] } })))).toEqual(['INVALID_REQUEST', 'connector_binding.actions[0].parameters']);
    expect(failField(() => tool(parts({ connector_binding: { actions: {} } })))).toEqual(['INVALID_REQUEST', 'connector_binding.actions']);
    expect(failField(() => restRequest(PutFlowRequestSchema)(parts({ graph: { nodes: [null] } })))).toEqual(['INVALID_REQUEST', 'graph.nodes[0]']);
    expect(failField(() => restRequest(PutFlowRequestSchema)(parts({ variables: 'x' })))).toEqual(['INVALID_REQUEST', 'variables']);
  });
  it('lets Value fields carry anything and ignores nulls', () => {
    expect(tool(parts({ request_body: [1], headers: null }))).toEqual({ request_body: [1], headers: null });
  });
  it('non-object bodies are INVALID_BODY', () => {
    expect(failField(() => tool(parts([1])))?.[0]).toBe('INVALID_BODY');
    expect(failField(() => tool(parts('x')))?.[0]).toBe('INVALID_BODY');
  });
});
