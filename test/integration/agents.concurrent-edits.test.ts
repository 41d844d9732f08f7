/**
 * Concurrent edits of one agent's sub-resources (outside audit): every PUT of a tool, a provider
 * or the telephony binding merged into the row it read, so parallel PUTs each wrote back the
 * others' old fields, and an edit without a key could undo a key rotation that had answered 200.
 * They now take turns on the agent row's lock: every change that answered 200 is kept.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestUser, restClient, startAgentsApp, type AgentsApp, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let owner: TestUser;
let call: ReturnType<typeof restClient>;
let agentId = '';

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
