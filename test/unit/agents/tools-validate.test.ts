import { describe, expect, it } from 'vitest';
import { checkJsonSchema } from '../../../control-plane/agents/tools/json-schema.js';
import { checkConnectorBinding, checkConnectorRequest, checkToolInput } from '../../../control-plane/agents/tools/validate.js';
import { AppError } from '../../../shared/errors.js';

function fail(fn: () => unknown): AppError {
  try {
    fn();
  } catch (e) {
    return e as AppError;
  }
  throw new Error('did not throw');
}

describe('checkToolInput', () => {
  it('returns only the fields present, normalised', () => {
    expect(checkToolInput({ name: 'get-order_1', httpMethod: 'patch', authType: '' })).toEqual({ name: 'get-order_1', http_method: 'PATCH', auth_type: 'none' });
    expect(checkToolInput({})).toEqual({});
  });
  it.each([
    [{ name: 'has space' }, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'a'.repeat(65) }, 'name'],
    [{ httpMethod: 'HEAD' }, 'http_method'],
    [{ endpointUrl: 'mailto:x@example.com' }, 'endpoint_url'],
    [{ timeoutMs: 0 }, 'timeout_ms'],
    [{ timeoutMs: 60_001 }, 'timeout_ms'],
    [{ retryCount: 6 }, 'retry_count'],
    [{ requestBody: 3 }, 'request_body'],
    [{ requestBody: true }, 'request_body'],
    [{ headers: { 'bad header': 'x' } }, 'headers'],
    [{ headers: { 'X-Ok': 'line\nbreak' } }, 'headers.X-Ok'],
    [{ authType: 'kerberos' }, 'auth_type'],
    [{ functionSchema: { type: 'strng' } }, 'function_schema'],
    [{ functionSchema: { required: 'x' } }, 'function_schema'],
    // The caller would choose where the token goes (outside audit): only the path and query take placeholders.
    [{ endpointUrl: 'https://{{city}}/ok' }, 'endpoint_url'],
    [{ endpointUrl: 'https://api.{{region}}.example.com/ok' }, 'endpoint_url'],
  ])('%j -> 400 naming %s', (input, field) => {
    const e = fail(() => checkToolInput(input as never));
    expect(e.code).toBe('INVALID_REQUEST');
    expect(e.details?.[0].field).toBe(field);
  });
  it('placeholders in the path and the query are fine', () => {
    expect(checkToolInput({ endpointUrl: 'https://api.example.com/city/{{city}}?units={{units}}' }).endpoint_url).toBe('https://api.example.com/city/{{city}}?units={{units}}');
  });
  it('request_body: object, string, or null (clear)', () => {
    expect(checkToolInput({ requestBody: { a: 1 } }).request_body).toEqual({ a: 1 });
    expect(checkToolInput({ requestBody: 'raw' }).request_body).toBe('raw');
    expect(checkToolInput({ requestBody: null }).request_body).toBeNull();
  });
});

describe('checkJsonSchema', () => {
  it('accepts ordinary and vendor-extended schemas repeatedly (ajv cache is cleaned)', () => {
    const s = { $id: 'https://example.com/s', type: 'object', properties: { a: { type: 'string', format: 'email', 'x-ui': 1 } } };
    for (let i = 0; i < 3; i++) checkJsonSchema('function_schema', structuredClone(s));
    checkJsonSchema('function_schema', {});
  });
  it('rejects oversized schemas', () => {
    const big = { description: 'x'.repeat(70_000) };
    expect(fail(() => checkJsonSchema('function_schema', big)).details?.[0].field).toBe('function_schema');
  });
});

describe('connector binding', () => {
  const action = { name: 'crm__create_contact', description: 'Create', parameters: { type: 'object' } };
  it('normalises: fixed defaults to {}, fixed_labels kept when sent', () => {
    expect(checkConnectorBinding({ connectionId: ' c1 ', actions: [action] })).toEqual({ connection_id: 'c1', actions: [{ ...action, fixed: {} }] });
    expect(checkConnectorBinding({ connectionId: 'c1', actions: [{ ...action, fixed: { a: 1 }, fixedLabels: { a: 'A' } }] }).actions[0]).toMatchObject({ fixed: { a: 1 }, fixed_labels: { a: 'A' } });
  });
  it.each([
    [{ connectionId: '', actions: [action] }, 'connector_binding.connection_id'],
    [{ connectionId: 'c', actions: [] }, 'connector_binding.actions'],
    [{ connectionId: 'c', actions: [{ ...action, name: 'crm_create' }] }, 'connector_binding.actions[0].name'],
    [{ connectionId: 'c', actions: [{ ...action, name: 'CRM__x' }] }, 'connector_binding.actions[0].name'],
    [{ connectionId: 'c', actions: [{ ...action, parameters: undefined }] }, 'connector_binding.actions[0].parameters'],
    [{ connectionId: 'c', actions: [{ ...action, parameters: { type: 1 } }] }, 'connector_binding.actions[0].parameters'],
    [{ connectionId: 'c', actions: [action, action] }, 'connector_binding.actions[1].name'],
  ])('%j -> 400 naming %s', (b, field) => expect(fail(() => checkConnectorBinding(b as never)).details?.[0].field).toBe(field));

  it('connector: with a connection_id is INVALID_REQUEST; alone it is resolved by the connectors domain; absent fine', () => {
    expect(fail(() => checkConnectorRequest('calendly', { connectionId: 'c', actions: [] })).code).toBe('INVALID_REQUEST');
    expect(() => checkConnectorRequest('calendly', undefined)).not.toThrow();
    expect(() => checkConnectorRequest(undefined, { connectionId: 'c', actions: [] })).not.toThrow();
  });
});
