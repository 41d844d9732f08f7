/**
 * Secrets sent back as they were read (`••••••••` + last four): the stored secret stays, for
 * provider keys too (a provider's masked read-back was stored as the key itself, so a client that
 * PUT back what it read broke the agent's LLM). A masked value that is not the stored secret's
 * mask is 400 naming the field (it was kept silently).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUser, restClient, startAgentsApp, type AgentsApp, type TestUser } from '../unit/agents/support.js';

const KEY = 'sk-llm-SECRET-7777-abcd';
let h: AgentsApp;
let owner: TestUser;
let call: ReturnType<typeof restClient>;
let agentId = '';

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h, []);
  owner = await createTestUser(h);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Masked' })).body.data.id as string;
});

afterAll(async () => {
  await h?.close();
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
