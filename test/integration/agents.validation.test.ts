/**
 * Every validation rule of agents, providers, tools and knowledge-base bindings with a bad-input
 * case (REST). Tests assert status, code and the named field, never message text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/accounts.js';
import { newId } from '../../shared/ids.js';
import {
  createMemoryItem,
  createTestUser,
  expectError,
  expectInvalid,
  restClient,
  startAgentsApp,
  type AgentsApp,
  type Call,
  type TestUser,
} from '../unit/agents/support.js';

let h: AgentsApp;
let owner: TestUser;
let other: TestUser;
let call: Call;
let agentId = '';
const url = 'https://example.com/hook';

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  [owner, other] = await Promise.all([createTestUser(h), createTestUser(h)]);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'V' })).body.data.id;
});

afterAll(async () => {
  await h?.close();
});

describe('agent fields', () => {
  it('create needs workspace_id and name', async () => {
    expectInvalid(await call('POST', '/agents', owner.token, { name: 'x' }), 'workspace_id');
    expectInvalid(await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId }), 'name');
    expectInvalid(await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: '   ' }), 'name');
    expectInvalid(await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 123 }), 'name');
  });

  it('create in a workspace that is not the caller is 404, a non-UUID workspace too', async () => {
    expectError(await call('POST', '/agents', owner.token, { workspace_id: other.workspaceId, name: 'x' }), 404, 'NOT_FOUND');
    expectError(await call('POST', '/agents', owner.token, { workspace_id: 'ws-1', name: 'x' }), 404, 'NOT_FOUND');
  });

  it('rejects out-of-range and wrong-typed fields, naming them', async () => {
    const base = { workspace_id: owner.workspaceId, name: 'x' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ max_turns: 0 }, 'max_turns'],
      [{ max_turns: 1001 }, 'max_turns'],
      [{ max_turns: 'many' }, 'max_turns'],
      // JSON numbers only: the proto3 JSON mapping would read these strings as 5, 16 and 0.1.
      [{ max_turns: '5' }, 'max_turns'],
      [{ max_turns: '0x10' }, 'max_turns'],
      [{ vad_threshold: '1e-1' }, 'vad_threshold'],
      [{ silence_timeout_ms: '8000' }, 'silence_timeout_ms'],
      [{ vad_threshold: 1.5 }, 'vad_threshold'],
      [{ silence_timeout_ms: -1 }, 'silence_timeout_ms'],
      [{ mode: 'chaos' }, 'mode'],
      [{ language: 'english!' }, 'language'],
      [{ connection_type: 'fax' }, 'connection_type'],
      [{ interrupt_enabled: 'yes' }, 'interrupt_enabled'],
      [{ metadata: 'x' }, 'metadata'],
      [{ metadata: [1] }, 'metadata'],
    ];
    for (const [body, field] of cases) expectInvalid(await call('POST', '/agents', owner.token, { ...base, ...body }), field);
    for (const [body, field] of cases) expectInvalid(await call('PUT', `/agents/${agentId}`, owner.token, body), field);
  });

  it('update: connectors must be an array of non-empty strings; they accumulate', async () => {
    expectInvalid(await call('PUT', `/agents/${agentId}`, owner.token, { connectors: 'calendar' }), 'connectors');
    expectInvalid(await call('PUT', `/agents/${agentId}`, owner.token, { connectors: [1] }), 'connectors[0]');
    expectInvalid(await call('PUT', `/agents/${agentId}`, owner.token, { connectors: [''] }), 'connectors[0]');
    expectInvalid(await call('PUT', `/agents/${agentId}`, owner.token, { name: '' }), 'name');
    // Entries must name catalog providers with a live connection (issue 18): seeded as a key connect leaves them.
    for (const provider of ['hubspot', 'calcom', 'zendesk']) {
      await h.infra.sql`
        insert into connector_connections (id, workspace_id, provider_id, auth_mode, enabled_products, secret_enc)
        values (${newId()}, ${owner.workspaceId}, ${provider}, 'api_key', ${provider === 'hubspot' ? ['crm'] : provider === 'calcom' ? ['scheduling'] : ['helpdesk']}, ${h.infra.secrets.encrypt('{}')})`;
    }
    const id = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'C' })).body.data.id;
    expectError(await call('PUT', `/agents/${id}`, owner.token, { connectors: ['crm'] }), 404, 'UNKNOWN_CONNECTOR');
    expect((await call('PUT', `/agents/${id}`, owner.token, { connectors: ['hubspot', 'calcom'] })).body.data.connectors).toEqual(['hubspot', 'calcom']);
    expect((await call('PUT', `/agents/${id}`, owner.token, { connectors: ['calcom', 'zendesk'] })).body.data.connectors).toEqual(['hubspot', 'calcom', 'zendesk']);
    // Ids and names match case-insensitively: another spelling is the same connector, kept once.
    expect((await call('PUT', `/agents/${id}`, owner.token, { connectors: ['HubSpot', 'ZENDESK'] })).body.data.connectors).toEqual(['hubspot', 'calcom', 'zendesk']);
    const fresh = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'D' })).body.data.id;
    expect((await call('PUT', `/agents/${fresh}`, owner.token, { connectors: ['hubspot', 'HubSpot'] })).body.data.connectors).toEqual(['hubspot']);
  });

  it('update changes only the fields sent; nulls are ignored', async () => {
    const res = await call('PUT', `/agents/${agentId}`, owner.token, { description: 'd', max_turns: 12, name: null, metadata: { amd_policy: 'leave_voicemail' } });
    expect(res.body.data).toMatchObject({ name: 'V', description: 'd', max_turns: 12, language: 'en', metadata: { amd_policy: 'leave_voicemail' } });
  });

  it('bodies that are not JSON objects are INVALID_BODY; unknown ids are 404', async () => {
    const raw = await api(h, 'POST', '/api/v1/agents', { token: owner.token, rawBody: '{nope' });
    expectError(raw, 400, 'INVALID_BODY');
    expectError(await call('POST', '/agents', owner.token, [1, 2]), 400, 'INVALID_BODY');
    // connectors are bound on update only: on create they would be dropped.
    expectInvalid(await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'C', connectors: ['hubspot'] }), 'connectors');
    expect((await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'C', connectors: [] })).status).toBe(201);
    // Bytes that are not UTF-8 are refused, not stored as U+FFFD.
    const notUtf8 = Buffer.concat([Buffer.from(`{"workspace_id":"${owner.workspaceId}","name":"bad`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const bad = await api(h, 'POST', '/api/v1/agents', { token: owner.token, rawBody: notUtf8 });
    expectError(bad, 400, 'INVALID_BODY');
    expect(bad.body.error.message).toBe('request body is not valid UTF-8');
    // Connect JSON too: invalid_argument, and no agent named with U+FFFD.
    const rpc = await api(h, 'POST', '/voiceplane.v1.AgentService/CreateAgent', { token: owner.token, rawBody: notUtf8 });
    expect([rpc.status, rpc.body.code]).toEqual([400, 'invalid_argument']);
    const named = await call('GET', `/agents?workspace_id=${owner.workspaceId}&limit=100`, owner.token);
    expect(named.body.data.some((a: { name: string }) => a.name.includes('\uFFFD'))).toBe(false);
    expectError(await call('GET', '/agents/not-a-uuid', owner.token), 404, 'NOT_FOUND');
    expectError(await call('GET', '/agents/0190a0a0-0000-7000-8000-000000000000', owner.token), 404, 'NOT_FOUND');
    expectError(await call('GET', '/agents', undefined), 401, 'UNAUTHORIZED');
  });
});

describe('agent providers', () => {
  it('provider_type must be llm, tts or asr', async () => {
    expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'video', provider_name: 'x' }), 'provider_type');
    expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_name: 'x' }), 'provider_type');
    expectInvalid(await call('DELETE', `/agents/${agentId}/providers/video`, owner.token), 'provider_type');
    expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm' }), 'provider_name');
    expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'x', base_url: 'ftp://x' }), 'base_url');
    expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'x', api_key: 5 }), 'api_key');
    // WebSocket vendors take their documented wss:// endpoint; HTTP vendors do not.
    const deepgram = await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'asr', provider_name: 'deepgram', base_url: 'wss://api.eu.deepgram.com' });
    expect(deepgram.status).toBe(200);
    expect(JSON.stringify(deepgram.body)).toContain('wss://api.eu.deepgram.com');
    expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'tts', provider_name: 'cartesia', base_url: 'wss://api.cartesia.ai' })).status).toBe(200);
    const wsForHttp = await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', base_url: 'wss://api.openai.com/v1' });
    expectInvalid(wsForHttp, 'base_url');
    expect(JSON.stringify(wsForHttp.body)).toContain('must be an http or https URL');
    expect((await call('DELETE', `/agents/${agentId}/providers/asr`, owner.token)).status).toBe(200);
    expect((await call('DELETE', `/agents/${agentId}/providers/tts`, owner.token)).status).toBe(200);
    expectError(await call('DELETE', `/agents/${agentId}/providers/tts`, owner.token), 404, 'NOT_FOUND');
    // The offline `local` TTS: model_name is the Flite voice, from a fixed list; empty = the default.
    expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'tts', provider_name: 'local', model_name: 'alloy' }), 'model_name');
    expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'tts', provider_name: 'local', model_name: 'kal16' })).status).toBe(200);
    expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'tts', provider_name: 'local' })).status).toBe(200);
    expect((await call('DELETE', `/agents/${agentId}/providers/tts`, owner.token)).status).toBe(200);
  });

  it('replacing keeps the key for the same provider, drops it for another, "" clears it', async () => {
    const p = `/agents/${agentId}/providers`;
    expect((await call('POST', p, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: 'key-0000-1234' })).body.data.api_key).toBe('••••••••1234');
    expect((await call('POST', p, owner.token, { provider_type: 'llm', provider_name: 'openai', model_name: 'gpt-4o' })).body.data).toMatchObject({ api_key: '••••••••1234', model_name: 'gpt-4o' });
    expect((await call('POST', p, owner.token, { provider_type: 'llm', provider_name: 'anthropic' })).body.data.api_key).toBe('');
    expect((await call('POST', p, owner.token, { provider_type: 'llm', provider_name: 'anthropic', api_key: 'short' })).body.data.api_key).toBe('••••••••');
    expect((await call('POST', p, owner.token, { provider_type: 'llm', provider_name: 'anthropic', api_key: '' })).body.data.api_key).toBe('');
    expect((await call('GET', p, owner.token)).body.data).toHaveLength(1);
  });

  it('a stored key never follows base_url to another host: 400 naming api_key unless the key is sent again', async () => {
    const p = `/agents/${agentId}/providers`;
    const llm = { provider_type: 'llm', provider_name: 'openai_compatible', model_name: 'm' };
    expect((await call('POST', p, owner.token, { ...llm, base_url: 'https://llm.example.com/v1', api_key: 'key-0000-5678' })).body.data.api_key).toBe('••••••••5678');
    // Same origin, another path: kept.
    expect((await call('POST', p, owner.token, { ...llm, base_url: 'https://llm.example.com/v2' })).body.data.api_key).toBe('••••••••5678');
    // Another host (or the vendor's default address) without the key: refused, nothing changed.
    expectInvalid(await call('POST', p, owner.token, { ...llm, base_url: 'https://elsewhere.example.net/v1' }), 'api_key');
    expectInvalid(await call('POST', p, owner.token, { ...llm, base_url: 'https://llm.example.com:8443/v2' }), 'api_key');
    expectInvalid(await call('POST', p, owner.token, llm), 'api_key');
    const kept = (await call('GET', p, owner.token)).body.data.find((x: { provider_type: string }) => x.provider_type === 'llm');
    expect(kept).toMatchObject({ base_url: 'https://llm.example.com/v2', api_key: '••••••••5678' });
    // Sending the key again (or clearing it) moves it.
    expect((await call('POST', p, owner.token, { ...llm, base_url: 'https://elsewhere.example.net/v1', api_key: 'key-0000-9012' })).body.data.api_key).toBe('••••••••9012');
    expect((await call('POST', p, owner.token, { ...llm, api_key: '' })).body.data).toMatchObject({ base_url: '', api_key: '' });
    expect((await call('POST', p, owner.token, { ...llm, base_url: 'https://third.example.org' })).status).toBe(200);
  });
});

describe('tools', () => {
  const tools = () => `/agents/${agentId}/tools`;
  const ok = { name: 'ok_tool', endpoint_url: url };

  it('name: required, pattern, unique per agent (also on rename)', async () => {
    expectInvalid(await call('POST', tools(), owner.token, { endpoint_url: url }), 'name');
    expectInvalid(await call('POST', tools(), owner.token, { name: 'bad name', endpoint_url: url }), 'name');
    expectInvalid(await call('POST', tools(), owner.token, { name: 'x'.repeat(65), endpoint_url: url }), 'name');
    expect((await call('POST', tools(), owner.token, ok)).status).toBe(201);
    expectError(await call('POST', tools(), owner.token, ok), 409, 'TOOL_NAME_TAKEN');
    const second = await call('POST', tools(), owner.token, { name: 'second-tool', endpoint_url: url });
    expectError(await call('PUT', `${tools()}/${second.body.data.id}`, owner.token, { name: 'ok_tool' }), 409, 'TOOL_NAME_TAKEN');
    expect((await call('PUT', `${tools()}/${second.body.data.id}`, owner.token, { name: 'renamed' })).body.data.name).toBe('renamed');
  });

  it('checks every field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ function_schema: { type: 12 } }, 'function_schema'],
      [{ function_schema: { properties: { a: { type: 'nope' } } } }, 'function_schema'],
      [{ function_schema: 'x' }, 'function_schema'],
      [{ http_method: 'TRACE' }, 'http_method'],
      [{ endpoint_url: 'not a url' }, 'endpoint_url'],
      [{ endpoint_url: 'ftp://example.com' }, 'endpoint_url'],
      [{ endpoint_url: '' }, 'endpoint_url'],
      [{ timeout_ms: 0 }, 'timeout_ms'],
      [{ timeout_ms: 60001 }, 'timeout_ms'],
      [{ retry_count: 6 }, 'retry_count'],
      [{ retry_count: -1 }, 'retry_count'],
      [{ request_body: 5 }, 'request_body'],
      [{ request_body: [1] }, 'request_body'],
      [{ headers: { 'X-A': 1 } }, 'headers.X-A'],
      [{ headers: 'x' }, 'headers'],
      [{ auth_type: 'magic' }, 'auth_type'],
      [{ is_active: 'yes' }, 'is_active'],
    ];
    for (const [body, field] of cases) expectInvalid(await call('POST', tools(), owner.token, { name: 'checked', endpoint_url: url, ...body }), field);
    const t = (await call('GET', tools(), owner.token)).body.data[0];
    for (const [body, field] of cases) expectInvalid(await call('PUT', `${tools()}/${t.id}`, owner.token, body), field);
  });

  it('connector_binding: shape is validated, then the connection must exist', async () => {
    const action = { name: 'cal__book', description: 'Book', parameters: { type: 'object' }, fixed: { calendar_id: '{{cal}}' } };
    const bad: Array<[unknown, string]> = [
      [{ actions: [action] }, 'connector_binding.connection_id'],
      [{ connection_id: 'c1', actions: [] }, 'connector_binding.actions'],
      [{ connection_id: 'c1', actions: 'x' }, 'connector_binding.actions'],
      [{ connection_id: 'c1', actions: [{ ...action, name: 'Book' }] }, 'connector_binding.actions[0].name'],
      [{ connection_id: 'c1', actions: [{ ...action, name: 'cal_book' }] }, 'connector_binding.actions[0].name'],
      [{ connection_id: 'c1', actions: [{ name: 'cal__book', description: '' }] }, 'connector_binding.actions[0].parameters'],
      [{ connection_id: 'c1', actions: [{ ...action, parameters: { type: 7 } }] }, 'connector_binding.actions[0].parameters'],
      [{ connection_id: 'c1', actions: [{ ...action, parameters: 'x' }] }, 'connector_binding.actions[0].parameters'],
      [{ connection_id: 'c1', actions: [{ ...action, fixed: 'x' }] }, 'connector_binding.actions[0].fixed'],
      [{ connection_id: 'c1', actions: [action, action] }, 'connector_binding.actions[1].name'],
      ['x', 'connector_binding'],
    ];
    for (const [b, field] of bad) expectInvalid(await call('POST', tools(), owner.token, { name: 'bound', connector_binding: b }), field);
    // A well-formed binding must still name a live connection of the workspace (issue 18; the
    // stored shape of a bound tool is asserted in connectors.test.ts, against a real connection).
    const res = await call('POST', tools(), owner.token, { name: 'bound', connector_binding: { connection_id: 'c1', actions: [{ ...action, fixed_labels: { calendar_id: 'Main' } }] } });
    expectError(res, 404, 'NOT_FOUND');
  });

  it('connector: with connector_binding.connection_id is 400, alone is UNKNOWN_CONNECTOR', async () => {
    const both = await call('POST', tools(), owner.token, { connector: 'calendly', connector_binding: { connection_id: 'c1', actions: [] } });
    expectError(both, 400, 'INVALID_REQUEST');
    expectError(await call('POST', tools(), owner.token, { connector: 'calendly' }), 404, 'UNKNOWN_CONNECTOR');
    expectError(await call('POST', tools(), owner.token, { connector: 'calendly', name: 'cal' }), 404, 'UNKNOWN_CONNECTOR');
  });

  it('auth_token: omitted or masked keeps it, "" clears it; unknown tools are 404', async () => {
    const t = (await call('POST', tools(), owner.token, { name: 'tokened', endpoint_url: url, auth_token: 'tok-abcdef-9999' })).body.data;
    expect(t.auth_token).toBe('••••••••9999');
    expect((await call('PUT', `${tools()}/${t.id}`, owner.token, { description: 'x' })).body.data.auth_token).toBe('••••••••9999');
    expect((await call('PUT', `${tools()}/${t.id}`, owner.token, { auth_token: t.auth_token })).body.data.auth_token).toBe('••••••••9999');
    expect((await call('PUT', `${tools()}/${t.id}`, owner.token, { auth_token: '' })).body.data.auth_token).toBe('');
    expectError(await call('GET', `${tools()}/nope`, owner.token), 404, 'NOT_FOUND');
    expectError(await call('GET', `${tools()}/0190a0a0-0000-7000-8000-000000000000`, owner.token), 404, 'NOT_FOUND');
    expectError(await call('DELETE', `${tools()}/0190a0a0-0000-7000-8000-000000000000`, owner.token), 404, 'NOT_FOUND');
    expect((await call('GET', `${tools()}/${t.id}`, owner.token)).body.data.name).toBe('tokened');
  });

  it('a stored auth_token never follows endpoint_url to another host', async () => {
    const t = (await call('POST', tools(), owner.token, { name: 'moving', endpoint_url: 'https://api.example.com/a', auth_token: 'tok-abcdef-4321' })).body.data;
    expect((await call('PUT', `${tools()}/${t.id}`, owner.token, { endpoint_url: 'https://api.example.com/b' })).body.data.auth_token).toBe('••••••••4321');
    expectInvalid(await call('PUT', `${tools()}/${t.id}`, owner.token, { endpoint_url: 'https://attacker.example.net/b' }), 'auth_token');
    expectInvalid(await call('PUT', `${tools()}/${t.id}`, owner.token, { endpoint_url: 'http://api.example.com/b' }), 'auth_token');
    expectInvalid(await call('PUT', `${tools()}/${t.id}`, owner.token, { endpoint_url: 'https://attacker.example.net/b', auth_token: t.auth_token }), 'auth_token');
    expect((await call('GET', `${tools()}/${t.id}`, owner.token)).body.data).toMatchObject({ endpoint_url: 'https://api.example.com/b', auth_token: '••••••••4321' });
    const moved = await call('PUT', `${tools()}/${t.id}`, owner.token, { endpoint_url: 'https://other.example.net/b', auth_token: 'tok-abcdef-8765' });
    expect(moved.body.data).toMatchObject({ endpoint_url: 'https://other.example.net/b', auth_token: '••••••••8765' });
    expect((await call('PUT', `${tools()}/${t.id}`, owner.token, { endpoint_url: 'https://third.example.org/b', auth_token: '' })).body.data.auth_token).toBe('');
  });
});

describe('knowledge-base bindings', () => {
  const kbs = () => `/agents/${agentId}/knowledge-bases`;

  it('needs a memory item of the agent workspace and a known mode', async () => {
    const mine = await createMemoryItem(h, owner.token, owner.workspaceId, 'Mine', 'm');
    const theirs = await createMemoryItem(h, other.token, other.workspaceId, 'Theirs', 't');
    expectInvalid(await call('POST', kbs(), owner.token, { mode: 'always' }), 'knowledge_base_id');
    expectError(await call('POST', kbs(), owner.token, { knowledge_base_id: 'kb-1', mode: 'always' }), 404, 'NOT_FOUND');
    expectError(await call('POST', kbs(), owner.token, { knowledge_base_id: theirs, mode: 'always' }), 404, 'NOT_FOUND');
    expectInvalid(await call('POST', kbs(), owner.token, { knowledge_base_id: mine, mode: 'sometimes' }), 'mode');

    const b = await call('POST', kbs(), owner.token, { knowledge_base_id: mine, mode: 'on_demand' });
    expect(b.status).toBe(201);
    // binding the same item again is idempotent: same binding, new mode
    const again = await call('POST', kbs(), owner.token, { knowledge_base_id: mine });
    expect(again.body.data).toMatchObject({ id: b.body.data.id, mode: 'always' });

    expectInvalid(await call('PUT', `${kbs()}/${b.body.data.id}`, owner.token, { mode: 'never' }), 'mode');
    expectInvalid(await call('PUT', `${kbs()}/${b.body.data.id}`, owner.token, { is_active: 'no' }), 'is_active');
    expectError(await call('PUT', `${kbs()}/0190a0a0-0000-7000-8000-000000000000`, owner.token, { mode: 'always' }), 404, 'NOT_FOUND');
    expect((await call('PUT', `${kbs()}/${b.body.data.id}`, owner.token, { mode: 'on_demand', is_active: false })).body.data).toMatchObject({ mode: 'on_demand', is_active: false });
    // addressable by the memory item id too
    expect((await call('PUT', `${kbs()}/${mine}`, owner.token, { is_active: true })).body.data.is_active).toBe(true);
    expect((await call('DELETE', `${kbs()}/${mine}`, owner.token)).body.data).toEqual({ message: 'deleted' });
    expect((await call('GET', kbs(), owner.token)).body.data).toEqual([]);
  });
});
