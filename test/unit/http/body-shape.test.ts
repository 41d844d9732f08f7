import { describe, expect, it } from 'vitest';
import { coerceQuery, decodeInput, defaultRequest } from '../../../control-plane/http/rest.js';
import { CreateToolRequestSchema, ListAgentsRequestSchema, PutFlowRequestSchema, UpdateAgentRequestSchema } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { CreateApiKeyRequestSchema, CreateMemoryItemRequestSchema } from '../../../shared/gen/voiceplane/v1/accounts_pb.js';
import type { DescMessage } from '@bufbuild/protobuf';
import { PutWebhookSettingsRequestSchema } from '../../../shared/gen/voiceplane/v1/webhooks_pb.js';
import { CreateQaRubricRequestSchema } from '../../../shared/gen/voiceplane/v1/qa_pb.js';
import type { AppError } from '../../../shared/errors.js';

const parts = (body: unknown, params: Record<string, string> = {}, query: Record<string, string> = {}) => ({ body, params, query, headers: new Headers() });
const req = (desc: DescMessage) => (body: unknown, params?: Record<string, string>) => defaultRequest(desc, parts(body, params));
const failure = (fn: () => unknown): [string, string | undefined, string | undefined] | undefined => {
  try {
    fn();
  } catch (e) {
    const err = e as AppError;
    return [err.code, err.details?.[0]?.field, err.details?.[0]?.problem];
  }
  return undefined;
};

describe('the REST body shape check (defaultRequest)', () => {
  const tool = req(CreateToolRequestSchema);
  const agent = req(UpdateAgentRequestSchema);
  const flow = req(PutFlowRequestSchema);

  it('merges query, body and params (params win)', () => {
    expect(tool({ name: 'x', agent_id: 'body' }, { agent_id: 'path' })).toEqual({ name: 'x', agent_id: 'path' });
  });

  it('a field in the query and the body with different values is 400 naming it (the body won silently); the same value twice is fine', () => {
    const put = (query: Record<string, string>, body: unknown) => defaultRequest(PutWebhookSettingsRequestSchema, parts(body, {}, query));
    expect(failure(() => put({ workspace_id: 'A' }, { workspace_id: 'B', webhook_url: 'https://x.example' }))).toEqual(['INVALID_REQUEST', 'workspace_id', 'is given in the query and in the body with different values']);
    expect(failure(() => put({ workspace_id: 'A' }, { workspaceId: 'B' }))?.[1]).toBe('workspace_id');
    expect(put({ workspace_id: 'A' }, { workspace_id: 'A', webhook_url: 'https://x.example' })).toEqual({ workspace_id: 'A', webhook_url: 'https://x.example' });
    expect(put({ workspace_id: 'A' }, { webhook_url: 'https://x.example' })).toEqual({ workspace_id: 'A', webhook_url: 'https://x.example' });
    const list = (query: Record<string, string>, body: unknown) => defaultRequest(ListAgentsRequestSchema, parts(body, {}, query));
    expect(list({ limit: '5' }, { limit: 5 })).toMatchObject({ limit: 5 });
    expect(failure(() => list({ limit: '5' }, { limit: 6 }))?.[1]).toBe('limit');
  });

  it('names the path of an object or array field of the wrong kind', () => {
    expect(failure(() => tool({ function_schema: 'x' }))?.slice(0, 2)).toEqual(['INVALID_REQUEST', 'function_schema']);
    expect(failure(() => tool({ connector_binding: { actions: [{ parameters: [] }] } }))?.slice(0, 2)).toEqual(['INVALID_REQUEST', 'connector_binding.actions[0].parameters']);
    expect(failure(() => tool({ connector_binding: { actions: {} } }))?.slice(0, 2)).toEqual(['INVALID_REQUEST', 'connector_binding.actions']);
    expect(failure(() => flow({ graph: { nodes: [null] } }))?.slice(0, 2)).toEqual(['INVALID_REQUEST', 'graph.nodes[0]']);
    expect(failure(() => flow({ variables: 'x' }))?.slice(0, 2)).toEqual(['INVALID_REQUEST', 'variables']);
  });

  it('a number field takes a JSON number only: "5", "0x10" and "1e-1" are refused, naming the field', () => {
    expect(failure(() => agent({ max_turns: '5' }))).toEqual(['INVALID_REQUEST', 'max_turns', 'must be an integer']);
    expect(failure(() => agent({ max_turns: '0x10' }))).toEqual(['INVALID_REQUEST', 'max_turns', 'must be an integer']);
    expect(failure(() => agent({ vad_threshold: '1e-1' }))).toEqual(['INVALID_REQUEST', 'vad_threshold', 'must be a number']);
    expect(agent({ max_turns: 5, vad_threshold: 0.1 })).toMatchObject({ max_turns: 5, vad_threshold: 0.1 });
  });

  it('strings and booleans keep their JSON types, at any depth, with the full path', () => {
    expect(failure(() => agent({ name: 5 }))).toEqual(['INVALID_REQUEST', 'name', 'must be a string']);
    expect(failure(() => agent({ interrupt_enabled: 'yes' }))).toEqual(['INVALID_REQUEST', 'interrupt_enabled', 'must be true or false']);
    expect(failure(() => flow({ graph: { nodes: [{ id: 'a', label: 5 }] } }))).toEqual(['INVALID_REQUEST', 'graph.nodes[0].label', 'must be a string']);
    expect(failure(() => req(CreateApiKeyRequestSchema)({ name: 'k', scopes: ['agents:read', 1] }))).toEqual(['INVALID_REQUEST', 'scopes[1]', 'must be a string']);
  });

  it('a lone surrogate or a NUL in a string field is named as such, not as a wrong type', () => {
    expect(failure(() => agent({ name: 'a\uD800b' }))).toEqual(['INVALID_REQUEST', 'name', 'must not contain unpaired UTF-16 surrogates']);
    expect(failure(() => flow({ graph: { nodes: [{ id: 'n\u0000' }] } }))).toEqual(['INVALID_REQUEST', 'graph.nodes[0].id', 'must not contain NUL (\\u0000) characters']);
  });

  it('lets Value fields carry anything and treats nulls as not sent', () => {
    expect(tool({ request_body: [1], headers: null })).toEqual({ request_body: [1], headers: null });
    expect(agent({ max_turns: null })).toEqual({ max_turns: null });
  });

  it('a number past a double inside free-form JSON (1e309) is named by its full path, not by the top field', () => {
    const rubric = req(CreateQaRubricRequestSchema);
    const body = JSON.parse('{"name":"r","criteria":[{"name":"a","weight":1},{"name":"b","weight":1e309}]}') as unknown;
    expect(failure(() => rubric(body))).toEqual(['INVALID_REQUEST', 'criteria[1].weight', 'is out of range']);
    expect(failure(() => tool(JSON.parse('{"request_body":{"deep":[0,-1e400]}}') as unknown))?.[1]).toBe('request_body.deep[1]');
  });

  it('JSON nested past the decoder\'s bound is named as too deep, not as a wrong type', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = { a: deep };
    const f = failure(() => decodeInput(CreateMemoryItemRequestSchema, { workspace_id: 'w', title: 't', content: 'c', metadata: deep }));
    expect(f?.[0]).toBe('INVALID_REQUEST');
    expect(f?.[2]).toMatch(/nested more than \d+ levels deep/);
  });

  it('non-object bodies are INVALID_BODY', () => {
    expect(failure(() => tool([1]))?.[0]).toBe('INVALID_BODY');
    expect(failure(() => tool('x'))?.[0]).toBe('INVALID_BODY');
  });
});

describe('query strings (coerceQuery)', () => {
  it('a value parameter given twice is 400 naming it (which one was meant is a guess)', () => {
    expect(failure(() => coerceQuery(ListAgentsRequestSchema, { limit: ['2', '3'] }))).toEqual(['INVALID_REQUEST', 'limit', 'is given more than once']);
    expect(coerceQuery(ListAgentsRequestSchema, { limit: '2' })).toEqual({ limit: 2 });
    expect(failure(() => coerceQuery(ListAgentsRequestSchema, { workspace_id: 'a', workspaceId: 'b' }))?.slice(1)).toEqual(['workspaceId', 'is given more than once']);
  });

  it('an integer past its type is out of range, not of the wrong type', () => {
    expect(failure(() => decodeInput(ListAgentsRequestSchema, coerceQuery(ListAgentsRequestSchema, { offset: '2147483648' })))).toEqual(['INVALID_REQUEST', 'offset', 'is out of range']);
    expect(failure(() => decodeInput(ListAgentsRequestSchema, { offset: 'x' }))).toEqual(['INVALID_REQUEST', 'offset', 'has the wrong type']);
  });
});
