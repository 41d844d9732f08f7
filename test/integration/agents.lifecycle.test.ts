/**
 * The heart of issue 3 over REST: create -> configure (providers, tools, knowledge bases, flow,
 * telephony) -> publish -> edit the draft (live config unchanged) -> publish -> rollback (live
 * config back to v1). Secrets are masked in every response, absent from every log line, and
 * decrypted only in `liveConfig`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotPublishedError } from '../../control-plane/agents/index.js';
import { AppError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { createMemoryItem, createTestUser, leaked, restClient, startAgentsApp, type AgentsApp, type TestUser } from '../unit/agents/support.js';

const LLM_KEY = 'sk-llm-SECRET-1111-aaaa-9876';
const LLM_KEY_2 = 'sk-llm-SECRET-2222-bbbb-5432';
const ASR_KEY = 'dg-asr-SECRET-3333-cccc-1357';
const TOOL_TOKEN = 'tool-token-SECRET-4444-2468';
const CARRIER_TOKEN = 'carrier-token-SECRET-5555-1122';
const ALL_SECRETS = [LLM_KEY, LLM_KEY_2, ASR_KEY, TOOL_TOKEN, CARRIER_TOKEN];
const NUMBER = '+14155552671';

let h: AgentsApp;
let owner: TestUser;
const bodies: string[] = [];
let call: ReturnType<typeof restClient>;

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h, bodies);
  owner = await createTestUser(h);
});

afterAll(async () => {
  await h?.close();
});

describe('agent lifecycle over REST', () => {
  let agentId = '';
  let toolId = '';
  let alwaysKb = '';
  let onDemandKb = '';
  let v1PublishedAt = '';

  it('creates an agent with the documented defaults', async () => {
    const res = await call('POST', '/agents', owner.token, {
      workspace_id: owner.workspaceId,
      name: 'Support',
      system_prompt: 'You are v1.',
      welcome_message: 'Hello from v1',
      metadata: { amd_enabled: true, amd_policy: 'hangup_on_machine' },
    });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    const a = res.body.data;
    agentId = a.id;
    expect(a).toMatchObject({
      workspace_id: owner.workspaceId,
      user_id: owner.userId,
      name: 'Support',
      language: 'en',
      max_turns: 50,
      connection_type: 'voice',
      interrupt_enabled: true,
      vad_threshold: 0.5,
      silence_timeout_ms: 8000,
      is_active: true,
      allow_human_transfer: false,
      mode: 'single_prompt',
      metadata: { amd_enabled: true, amd_policy: 'hangup_on_machine' },
      connectors: [],
      live_version: 0,
    });
    expect(a.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('liveConfig refuses an agent that was never published, and unknown agents', async () => {
    await expect(h.app.agents.liveConfig(agentId)).rejects.toBeInstanceOf(NotPublishedError);
    await expect(h.app.agents.liveConfig(agentId)).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(h.app.agents.liveConfig('0190a0a0-0000-7000-8000-000000000000')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(h.app.agents.liveConfig('nope')).rejects.toBeInstanceOf(AppError);
  });

  it('configures providers with masked keys', async () => {
    const llm = await call('POST', `/agents/${agentId}/providers`, owner.token, {
      provider_type: 'llm',
      provider_name: 'openai',
      api_key: LLM_KEY,
      model_name: 'gpt-4o-mini',
      base_url: 'https://api.openai.com/v1',
    });
    expect(llm.status).toBe(200);
    expect(llm.body.data).toMatchObject({ provider_type: 'llm', provider_name: 'openai', api_key: '••••••••9876', model_name: 'gpt-4o-mini' });
    const asr = await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'asr', provider_name: 'deepgram', api_key: ASR_KEY, model_name: 'nova-3' });
    expect(asr.body.data.api_key).toBe('••••••••1357');
    const tts = await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'tts', provider_name: 'sim' });
    expect(tts.body.data.api_key).toBe('');
    const list = await call('GET', `/agents/${agentId}/providers`, owner.token);
    expect(list.body.data.map((p: { provider_type: string }) => p.provider_type)).toEqual(['llm', 'asr', 'tts']);
  });

  it('adds a tool with an encrypted, masked auth token', async () => {
    const res = await call('POST', `/agents/${agentId}/tools`, owner.token, {
      name: 'lookup_order',
      description: 'Looks up an order',
      function_schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
      endpoint_url: 'https://example.com/orders',
      http_method: 'get',
      headers: { 'X-Tenant': 'acme' },
      auth_type: 'bearer',
      auth_token: TOOL_TOKEN,
      request_body: { order: '{{order_id}}' },
      timeout_ms: 5000,
      retry_count: 2,
    });
    expect(res.status).toBe(201);
    toolId = res.body.data.id;
    expect(res.body.data).toMatchObject({
      name: 'lookup_order',
      http_method: 'GET',
      auth_token: '••••••••2468',
      headers: { 'X-Tenant': 'acme' },
      request_body: { order: '{{order_id}}' },
      timeout_ms: 5000,
      retry_count: 2,
      is_active: true,
      connector_binding: null,
    });
    const inactive = await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'disabled_tool', endpoint_url: 'https://example.com/x', is_active: false });
    expect(inactive.status).toBe(201);
    expect(inactive.body.data).toMatchObject({ timeout_ms: 10000, retry_count: 0, http_method: 'POST', auth_type: 'none', request_body: null });
  });

  it('binds knowledge bases from the workspace memory', async () => {
    alwaysKb = await createMemoryItem(h, owner.token, owner.workspaceId, 'Hours', 'Open 9 to 5.');
    onDemandKb = await createMemoryItem(h, owner.token, owner.workspaceId, 'Catalog', 'Long catalog...');
    const a = await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: alwaysKb, mode: 'always' });
    expect(a.status).toBe(201);
    expect(a.body.data).toMatchObject({ agent_id: agentId, knowledge_base_id: alwaysKb, mode: 'always', is_active: true, title: 'Hours' });
    const b = await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: onDemandKb, mode: 'on_demand' });
    expect(b.status).toBe(201);
    const list = await call('GET', `/agents/${agentId}/knowledge-bases`, owner.token);
    expect(list.body.data).toHaveLength(2);
  });

  it('stores a flow and the telephony binding', async () => {
    const flow = await call('PUT', `/agents/${agentId}/flow`, owner.token, {
      graph: {
        nodes: [
          { id: 'start', type: 'start', label: 'Start' },
          { id: 'ask', type: 'prompt', label: 'Ask', config: { prompt: 'What is your order id?' } },
          { id: 'bye', type: 'end', label: 'Bye' },
        ],
        edges: [
          { from: 'start', to: 'ask' },
          { from: 'ask', to: 'bye', condition: 'order found' },
        ],
        start_node_id: 'start',
      },
      variables: [{ name: 'order_id', type: 'string' }],
    });
    expect(flow.status).toBe(200);
    expect(flow.body.data).toMatchObject({ agent_id: agentId, version: 1, is_valid: true, validation_errors: [] });
    const tel = await call('PUT', `/agents/${agentId}/telephony`, owner.token, {
      carrier_phone_number: NUMBER,
      carrier_account_sid: 'AC123',
      carrier_auth_token: CARRIER_TOKEN,
      call_direction: 'inbound',
      human_transfer_number: '+442071838750',
      human_transfer_mode: 'phone',
      transcribe_human_segment: true,
      generate_call_summary: true,
      webhook_url: 'https://hooks.example.com/calls',
    });
    expect(tel.status).toBe(200);
    expect(tel.body.data).toMatchObject({ agent_id: agentId, carrier_phone_number: NUMBER, carrier_auth_token: '••••••••1122', call_direction: 'inbound' });
    const back = await call('GET', `/agents/${agentId}/telephony`, owner.token);
    expect(back.body.data).toMatchObject({ agent_id: agentId, carrier_auth_token: '••••••••1122', generate_call_summary: true });
  });

  it('shows the draft detail with masked secrets and finds the agent by phone', async () => {
    const res = await call('GET', `/agents/${agentId}`, owner.token);
    expect(res.status).toBe(200);
    expect(res.body.data.agent.id).toBe(agentId);
    expect(res.body.data.providers).toHaveLength(3);
    expect(res.body.data.telephony.carrier_auth_token).toBe('••••••••1122');
    expect(res.body.data.knowledge_bases).toHaveLength(2);
    const look = await call('GET', `/agents/lookup/phone?phone_number=${encodeURIComponent(NUMBER)}`, owner.token);
    expect(look.status).toBe(200);
    expect(look.body.data.agent.id).toBe(agentId);
    expect(look.body.data.telephony.carrier_phone_number).toBe(NUMBER);
  });

  it('publishes version 1 and liveConfig returns it with secrets decrypted', async () => {
    const pub = await call('POST', `/agents/${agentId}/versions/publish`, owner.token);
    expect(pub.status).toBe(200);
    expect(pub.body.data).toMatchObject({ agent_id: agentId, version_number: 1, message: expect.any(String) });
    expect(Date.parse(pub.body.data.published_at)).toBeGreaterThan(0);
    v1PublishedAt = pub.body.data.published_at;

    const live = await h.app.agents.liveConfig(agentId);
    expect(live).toMatchObject({
      agent_id: agentId,
      workspace_id: owner.workspaceId,
      user_id: owner.userId,
      version_number: 1,
      system_prompt: 'You are v1.',
      welcome_message: 'Hello from v1',
      language: 'en',
      max_turns: 50,
      interrupt_enabled: true,
      vad_threshold: 0.5,
      silence_timeout_ms: 8000,
      mode: 'single_prompt',
      metadata: { amd_enabled: true, amd_policy: 'hangup_on_machine' },
    });
    expect(live.providers.llm).toMatchObject({ provider_name: 'openai', api_key: LLM_KEY, model_name: 'gpt-4o-mini', base_url: 'https://api.openai.com/v1', source: 'agent' });
    expect(live.providers.asr).toMatchObject({ provider_name: 'deepgram', api_key: ASR_KEY });
    expect(live.providers.tts).toMatchObject({ provider_name: 'sim', api_key: '' });
    expect(live.tools.map((t) => t.name)).toEqual(['lookup_order']);
    expect(live.tools[0]).toMatchObject({ auth_token: TOOL_TOKEN, http_method: 'GET', request_body: { order: '{{order_id}}' } });
    expect(live.knowledge.always).toEqual([{ knowledge_base_id: alwaysKb, title: 'Hours', content: 'Open 9 to 5.', content_type: 'text/plain' }]);
    expect(live.knowledge.on_demand_ids).toEqual([onDemandKb]);
    expect(live.flow?.is_valid).toBe(true);
    expect(live.flow?.graph.nodes).toHaveLength(3);
    expect(live.telephony).toMatchObject({ carrier_phone_number: NUMBER, carrier_auth_token: CARRIER_TOKEN, call_direction: 'inbound' });
    expect(await h.app.agents.findAgentByNumber(NUMBER)).toMatchObject({ agent_id: agentId, version_number: 1 });
    expect(await h.app.agents.findAgentByNumber('+12025550181')).toBeUndefined();
  });

  it('draft edits after a publish do not change the live configuration', async () => {
    const before = await h.app.agents.liveConfig(agentId);
    expect((await call('PUT', `/agents/${agentId}`, owner.token, { system_prompt: 'You are v2.', welcome_message: 'Hello from v2', max_turns: 7 })).status).toBe(200);
    expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: LLM_KEY_2 })).status).toBe(200);
    expect((await call('DELETE', `/agents/${agentId}/providers/asr`, owner.token)).status).toBe(200);
    expect((await call('DELETE', `/agents/${agentId}/tools/${toolId}`, owner.token)).body.data).toEqual({ message: 'deleted' });
    expect((await call('PUT', `/agents/${agentId}/knowledge-bases/${alwaysKb}`, owner.token, { is_active: false })).status).toBe(200);
    expect((await call('PUT', `/agents/${agentId}/telephony`, owner.token, { carrier_phone_number: '+12025550181', call_direction: 'both' })).status).toBe(200);
    expect((await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'flow' })).body.data).toEqual({ mode: 'flow' });
    // `connectors` needs a live connection (issue 18): one seeded row, as a key connect leaves it.
    await h.infra.sql`
      insert into connector_connections (id, workspace_id, provider_id, account_label, auth_mode, enabled_products, secret_enc)
      values (${newId()}, ${owner.workspaceId}, 'calcom', 'lee@clinic.example', 'api_key', '{scheduling}', ${h.infra.secrets.encrypt('{"api_key":"cal_test_x"}')})`;
    expect((await call('PUT', `/agents/${agentId}`, owner.token, { connectors: ['Cal.com'] })).body.data.connectors).toEqual(['Cal.com']);

    const after = await h.app.agents.liveConfig(agentId);
    expect(after).toEqual(before);
    expect(after.system_prompt).toBe('You are v1.');
    expect(after.providers.llm?.api_key).toBe(LLM_KEY);
    // the draft did change
    const draft = await call('GET', `/agents/${agentId}`, owner.token);
    expect(draft.body.data.agent).toMatchObject({ system_prompt: 'You are v2.', mode: 'flow', live_version: 1 });
  });

  it('publishes version 2, then rolls back to version 1', async () => {
    const pub = await call('POST', `/agents/${agentId}/versions/publish`, owner.token);
    expect(pub.body.data.version_number).toBe(2);
    const v2 = await h.app.agents.liveConfig(agentId);
    expect(v2).toMatchObject({ version_number: 2, system_prompt: 'You are v2.', max_turns: 7, mode: 'flow', connectors: ['Cal.com'] });
    expect(v2.providers.llm?.api_key).toBe(LLM_KEY_2);
    expect(v2.providers.asr).toBeNull();
    expect(v2.tools.map((t) => [t.name, t.connector_binding?.actions.length])).toEqual([['calcom', 3]]);
    expect(v2.knowledge.always).toEqual([]);
    expect(v2.telephony?.carrier_phone_number).toBe('+12025550181');
    expect(await h.app.agents.findAgentByNumber('+12025550181')).toMatchObject({ version_number: 2 });
    expect(await h.app.agents.findAgentByNumber(NUMBER)).toBeUndefined();

    const versions = await call('GET', `/agents/${agentId}/versions`, owner.token);
    expect(versions.body.data.map((v: { version_number: number; is_live: boolean }) => [v.version_number, v.is_live])).toEqual([
      [2, true],
      [1, false],
    ]);
    expect(versions.body.meta).toEqual({ page: 1, per_page: 20, total: 2, total_pages: 1 });

    const rb = await call('POST', `/agents/${agentId}/versions/1/rollback`, owner.token);
    expect(rb.status).toBe(200);
    expect(rb.body.data).toMatchObject({ agent_id: agentId, version_number: 1, message: expect.any(String) });
    // the version's own publication time: a rollback does not re-date it
    expect(rb.body.data.published_at).toBe(v1PublishedAt);
    const v1 = await h.app.agents.liveConfig(agentId);
    expect(v1).toMatchObject({ version_number: 1, system_prompt: 'You are v1.', mode: 'single_prompt' });
    expect(v1.providers.llm?.api_key).toBe(LLM_KEY);
    expect(v1.tools.map((t) => t.name)).toEqual(['lookup_order']);
    expect(await h.app.agents.findAgentByNumber(NUMBER)).toMatchObject({ agent_id: agentId, version_number: 1 });
    const after = await call('GET', `/agents/${agentId}/versions`, owner.token);
    expect(after.body.data.find((v: { is_live: boolean }) => v.is_live).version_number).toBe(1);
  });

  it('rollback to a version that does not exist is 404', async () => {
    for (const n of ['99', '0', 'abc', '99999999999']) {
      const res = await call('POST', `/agents/${agentId}/versions/${n}/rollback`, owner.token);
      expect(res.status, n).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('a create with a client-chosen id is idempotent: same body -> the same agent, other body or another tenant -> one 409', async () => {
    const id = '0190a0a0-1111-7000-8000-00000000a9e1';
    const body = { id, workspace_id: owner.workspaceId, name: 'retry me', system_prompt: 'p', metadata: { a: 1, b: [2] } };
    const [first, second] = await Promise.all([call('POST', '/agents', owner.token, body), call('POST', '/agents', owner.token, body)]);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.body.data.id).toBe(id);
    expect(second.body.data).toEqual(first.body.data);
    expect((await call('POST', '/agents', owner.token, { ...body, metadata: { b: [2], a: 1 } })).body.data.id).toBe(id);
    const other = await call('POST', '/agents', owner.token, { ...body, name: 'another' });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');
    const stranger = await createTestUser(h);
    const foreign = await call('POST', '/agents', stranger.token, { ...body, workspace_id: stranger.workspaceId });
    expect(foreign.status).toBe(409);
    expect(foreign.body.error.message).toBe(other.body.error.message);
    expect((await call('POST', '/agents', owner.token, { ...body, id: 'not-a-uuid' })).status).toBe(400);
    const listed = (await call('GET', `/agents?workspace_id=${owner.workspaceId}&limit=200`, owner.token)).body.data as Array<{ name: string }>;
    expect(listed.filter((a) => a.name === 'retry me')).toHaveLength(1);
  });

  it('concurrent publishes: version numbers and publication times agree in order', async () => {
    const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'busy publisher' });
    const id = created.body.data.id;
    const pubs = await Promise.all(Array.from({ length: 10 }, () => call('POST', `/agents/${id}/versions/publish`, owner.token)));
    expect(pubs.map((p) => p.status)).toEqual(Array(10).fill(200));
    const listed = (await call('GET', `/agents/${id}/versions?per_page=20`, owner.token)).body.data as Array<{ version_number: number; published_at: string }>;
    const byNumber = [...listed].sort((a, b) => a.version_number - b.version_number);
    expect(byNumber.map((v) => v.version_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Taken under the agent's lock: a later version is never dated before an earlier one.
    for (let i = 1; i < byNumber.length; i++) expect(Date.parse(byNumber[i]!.published_at)).toBeGreaterThanOrEqual(Date.parse(byNumber[i - 1]!.published_at));
  });

  it('deletes the agent (manager+) and liveConfig then says NOT_FOUND', async () => {
    const del = await call('DELETE', `/agents/${agentId}`, owner.token);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ message: 'deleted' });
    expect((await call('GET', `/agents/${agentId}`, owner.token)).status).toBe(404);
    await expect(h.app.agents.liveConfig(agentId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('no secret ever appears in a response body or a log line', () => {
    expect(bodies.length).toBeGreaterThan(20);
    expect(leaked(bodies, ALL_SECRETS)).toEqual([]);
    expect(h.infra.logLines.length).toBeGreaterThan(0);
    expect(leaked(h.infra.logLines, ALL_SECRETS)).toEqual([]);
  });
});
