/**
 * Edits of an agent's secrets and sub-resources (outside audits):
 * - concurrent edits of one agent's tools, providers and telephony binding merged into the row each
 *   had read, so parallel PUTs wrote back the others' old fields, and an edit without a key could
 *   undo a key rotation that had answered 200; they now take turns on the agent row's lock;
 * - secrets sent back as they were read (`••••••••` + last four) keep the stored secret, provider
 *   keys too (their masked read-back was stored as the key itself); a masked value that is not the
 *   stored secret's mask is 400 naming the field (it was kept silently).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUser, restClient, startAgentsApp, type AgentsApp, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let owner: TestUser;
let call: ReturnType<typeof restClient>;
let agentId = '';
const KEY = 'sk-llm-SECRET-7777-abcd';

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h, []);
  owner = await createTestUser(h);
  const res = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Concurrent' });
  agentId = res.body.data.id as string;
});

afterAll(async () => {
  await h?.close();
});

it('three PUTs of one tool at once, each of another field: all three fields are kept, every round', async () => {
  const tool = await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'lookup', description: 'first', endpoint_url: 'https://api.example.com/lookup', http_method: 'POST' });
  expect(tool.status).toBe(201);
  const toolId = tool.body.data.id as string;
  for (let round = 0; round < 5; round++) {
    const results = await Promise.all([
      call('PUT', `/agents/${agentId}/tools/${toolId}`, owner.token, { description: `desc ${round}` }),
      call('PUT', `/agents/${agentId}/tools/${toolId}`, owner.token, { timeout_ms: 1000 + round }),
      call('PUT', `/agents/${agentId}/tools/${toolId}`, owner.token, { retry_count: round % 4 }),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const read = await call('GET', `/agents/${agentId}/tools/${toolId}`, owner.token);
    expect(read.body.data).toMatchObject({ description: `desc ${round}`, timeout_ms: 1000 + round, retry_count: round % 4 });
  }
});

it('a key rotation and a concurrent edit without a key: the rotated key stays, every round', async () => {
  expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: 'sk-OLD-KEY-0000' })).status).toBeLessThan(300);
  for (let round = 0; round < 8; round++) {
    const fresh = `sk-NEW-KEY-${String(round).padStart(4, '0')}`;
    const [rotate, edit] = await Promise.all([
      call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: fresh }),
      call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', model_name: `gpt-${round}` }),
    ]);
    expect([rotate.status, edit.status].every((s) => s < 300)).toBe(true);
    // Whichever ran second kept the other's change: the key is the rotated one.
    const listed = await call('GET', `/agents/${agentId}/providers`, owner.token);
    const llm = (listed.body.data as Array<Record<string, unknown>>).find((p) => p.provider_type === 'llm')!;
    expect(String(llm.api_key)).toMatch(new RegExp(`${fresh.slice(-4)}$`));
  }
});

it('three PUTs of the telephony binding at once: all three fields are kept', async () => {
  for (let round = 0; round < 4; round++) {
    const results = await Promise.all([
      call('PUT', `/agents/${agentId}/telephony`, owner.token, { call_direction: round % 2 ? 'inbound' : 'outbound' }),
      call('PUT', `/agents/${agentId}/telephony`, owner.token, { carrier_account_sid: `AC${round}` }),
      call('PUT', `/agents/${agentId}/telephony`, owner.token, { webhook_url: `https://hooks.example.com/${round}` }),
    ]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const read = await call('GET', `/agents/${agentId}/telephony`, owner.token);
    expect(read.body.data).toMatchObject({ call_direction: round % 2 ? 'inbound' : 'outbound', carrier_account_sid: `AC${round}`, webhook_url: `https://hooks.example.com/${round}` });
  }
});

const field = (res: { body: { error?: { details?: Array<{ field: string }> } } }) => res.body.error?.details?.[0]?.field;

it('a provider key read back masked and sent again keeps the key; another mask is 400 naming api_key', async () => {
  await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: KEY });
  const listed = await call('GET', `/agents/${agentId}/providers`, owner.token);
  const masked = (listed.body.data as Array<Record<string, string>>).find((p) => p.provider_type === 'llm')!.api_key;
  expect(masked).toBe('••••••••abcd');
  expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: masked, model_name: 'gpt-4o' })).status).toBe(200);
  for (const type of ['asr', 'tts']) await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: type, provider_name: 'sim' });
  expect((await call('POST', `/agents/${agentId}/versions/publish`, owner.token)).status).toBeLessThan(300);
  const live = await h.app.agents.liveConfig(agentId);
  expect(live.providers.llm).toMatchObject({ api_key: KEY, model_name: 'gpt-4o' });

  const wrong = await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai', api_key: '••••••••9999' });
  expect([wrong.status, field(wrong)]).toEqual([400, 'api_key']);
});

it('a tool token and a carrier token: the read-back keeps them, another mask is 400 naming the field', async () => {
  const created = await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'crm', endpoint_url: 'https://crm.example.com/x', auth_type: 'bearer', auth_token: 'tool-token-SECRET-1234' });
  const toolId = created.body.data.id as string;
  expect(created.body.data.auth_token).toBe('••••••••1234');
  expect((await call('PUT', `/agents/${agentId}/tools/${toolId}`, owner.token, { auth_token: '••••••••1234', description: 'kept' })).status).toBe(200);
  const wrongTool = await call('PUT', `/agents/${agentId}/tools/${toolId}`, owner.token, { auth_token: '••••••••9999' });
  expect([wrongTool.status, field(wrongTool)]).toEqual([400, 'auth_token']);
  const maskedOnCreate = await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'crm2', endpoint_url: 'https://crm.example.com/y', auth_token: '••••••••1234' });
  expect([maskedOnCreate.status, field(maskedOnCreate)]).toEqual([400, 'auth_token']);

  expect((await call('PUT', `/agents/${agentId}/telephony`, owner.token, { carrier_auth_token: 'carrier-SECRET-5678' })).body.data.carrier_auth_token).toBe('••••••••5678');
  expect((await call('PUT', `/agents/${agentId}/telephony`, owner.token, { carrier_auth_token: '••••••••5678', call_direction: 'inbound' })).status).toBe(200);
  const wrongCarrier = await call('PUT', `/agents/${agentId}/telephony`, owner.token, { carrier_auth_token: '••••••••0000' });
  expect([wrongCarrier.status, field(wrongCarrier)]).toEqual([400, 'carrier_auth_token']);

  expect((await call('POST', `/agents/${agentId}/versions/publish`, owner.token)).status).toBeLessThan(300);
  const live = await h.app.agents.liveConfig(agentId);
  expect(live.tools.find((t) => t.name === 'crm')).toMatchObject({ auth_token: 'tool-token-SECRET-1234', description: 'kept' });
});
