/**
 * Provider registry over REST: seeded definitions, org-owner-only creation, user configurations
 * (keys never returned, not even masked), resolution precedence, and the publish-time fallback to
 * the owner's own configurations (never to the registry default).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser, expectError, expectInvalid, leaked, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

const USER_LLM_KEY = 'user-llm-SECRET-7777-0a0a';
const USER_TTS_KEY = 'user-tts-SECRET-8888-0b0b';
const AGENT_CFG_KEY = 'agent-cfg-SECRET-9999-0c0c';
const SECRETS = [USER_LLM_KEY, USER_TTS_KEY, AGENT_CFG_KEY];

let h: AgentsApp;
let user: TestUser;
let other: TestUser;
let call: Call;
const bodies: string[] = [];
type Def = { id: string; name: string; provider_type: string; default_config: Record<string, unknown>; is_active: boolean };
let defs: Def[] = [];
const def = (name: string, type: string) => defs.find((d) => d.name === name && d.provider_type === type)!;

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h, bodies);
  [user, other] = await Promise.all([createTestUser(h), createTestUser(h)]);
  defs = (await call('GET', '/providers', user.token)).body.data;
});

afterAll(async () => {
  await h?.close();
});

describe('provider definitions', () => {
  it('are seeded: sim for every type (the registry default) and the vendor adapters', async () => {
    for (const t of ['llm', 'asr', 'tts']) expect(def('sim', t)).toMatchObject({ is_active: true, default_config: { is_default: true } });
    for (const [n, t] of [['deepgram', 'asr'], ['openai', 'llm'], ['anthropic', 'llm'], ['elevenlabs', 'tts'], ['cartesia', 'tts']]) expect(def(n, t), n).toBeDefined();
    const tts = (await call('GET', '/providers?provider_type=tts', user.token)).body.data;
    expect(tts.every((d: Def) => d.provider_type === 'tts')).toBe(true);
    expectInvalid(await call('GET', '/providers?provider_type=video', user.token), 'provider_type');
    expect((await call('GET', `/providers/${def('openai', 'llm').id}`, user.token)).body.data.name).toBe('openai');
    expectError(await call('GET', '/providers/nope', user.token), 404, 'NOT_FOUND');
    expectError(await call('GET', '/providers/0190a0a0-0000-7000-8000-000000000000', user.token), 404, 'NOT_FOUND');
    expectError(await call('GET', '/providers', undefined), 401, 'UNAUTHORIZED');
  });

  it('only the organization owner adds definitions; fields are validated; names are unique per type', async () => {
    const body = { name: 'acme-tts', provider_type: 'tts', base_url: 'https://tts.acme.example', supported_models: ['m1'], supported_languages: ['en'], default_config: { default_model: 'm1' } };
    expectError(await call('POST', '/providers', user.token, body), 403, 'FORBIDDEN');
    const created = await call('POST', '/providers', h.orgKey, body);
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name: 'acme-tts', provider_type: 'tts', auth_type: 'api_key', is_active: true, supported_models: ['m1'] });
    expectError(await call('POST', '/providers', h.orgKey, body), 409, 'CONFLICT');
    expect((await call('POST', '/providers', h.orgKey, { ...body, provider_type: 'asr' })).status).toBe(201);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '' }, 'name'],
      [{ name: 'bad name' }, 'name'],
      [{ provider_type: 'video' }, 'provider_type'],
      [{ base_url: 'nope' }, 'base_url'],
      [{ auth_type: 'magic' }, 'auth_type'],
      [{ default_config: 'x' }, 'default_config'],
      [{ supported_models: 'x' }, 'supported_models'],
      [{ supported_models: [1] }, 'supported_models[0]'],
      [{ is_active: 'yes' }, 'is_active'],
    ];
    for (const [b, field] of cases) expectInvalid(await call('POST', '/providers', h.orgKey, { ...body, name: 'other', ...b }), field);
  });
});

describe('user configurations and resolution', () => {
  let agentId = '';

  beforeAll(async () => {
    agentId = (await call('POST', '/agents', user.token, { workspace_id: user.workspaceId, name: 'Resolver' })).body.data.id;
  });

  it('validates the request; the key is never returned', async () => {
    const openai = def('openai', 'llm');
    expectInvalid(await call('POST', '/providers/user-config', user.token, { api_key: 'x' }), 'provider_id');
    expectError(await call('POST', '/providers/user-config', user.token, { provider_id: 'openai' }), 404, 'NOT_FOUND');
    expectError(await call('POST', '/providers/user-config', user.token, { provider_id: '0190a0a0-0000-7000-8000-000000000000' }), 404, 'NOT_FOUND');
    expectInvalid(await call('POST', '/providers/user-config', user.token, { provider_id: openai.id, provider_type: 'tts' }), 'provider_type');
    expectInvalid(await call('POST', '/providers/user-config', user.token, { provider_id: openai.id, config: 'x' }), 'config');
    expectInvalid(await call('POST', '/providers/user-config', user.token, { provider_id: openai.id, agent_id: agentId, is_default: true }), 'is_default');
    const foreign = (await call('POST', '/agents', other.token, { workspace_id: other.workspaceId, name: 'Foreign' })).body.data.id;
    expectError(await call('POST', '/providers/user-config', user.token, { provider_id: openai.id, agent_id: foreign }), 404, 'NOT_FOUND');

    const res = await call('POST', '/providers/user-config', user.token, { provider_id: openai.id, api_key: USER_LLM_KEY, model_name: 'gpt-4o', is_default: true, config: { temperature: 0.2 } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ provider_id: openai.id, provider_name: 'openai', provider_type: 'llm', has_api_key: true, is_default: true, agent_id: '', config: { temperature: 0.2 } });
    expect(res.body.data).not.toHaveProperty('api_key');
    // same provider again: replaced in place, key kept when omitted
    const again = await call('POST', '/providers/user-config', user.token, { provider_id: openai.id, model_name: 'gpt-4o-mini' });
    expect(again.body.data).toMatchObject({ id: res.body.data.id, model_name: 'gpt-4o-mini', has_api_key: true, is_default: true });
    const list = await call('GET', '/providers/user-config', user.token);
    expect(list.body.data).toHaveLength(1);
    expect(JSON.stringify(list.body)).not.toContain('"api_key"');
    expect((await call('GET', '/providers/user-config', other.token)).body.data).toEqual([]);
  });

  it('resolves agent > agent-bound config > user default > registry default, never with a key', async () => {
    const r = async (q: string, token = user.token) => (await call('GET', `/providers/resolve?${q}`, token)).body;
    expectInvalid(await call('GET', '/providers/resolve', user.token), 'provider_type');
    expectInvalid(await call('GET', '/providers/resolve?provider_type=video', user.token), 'provider_type');
    expectError(await call('GET', `/providers/resolve?provider_type=llm&agent_id=${agentId}`, other.token), 404, 'NOT_FOUND');

    expect((await r('provider_type=asr')).data).toMatchObject({ source: 'registry_default', provider_name: 'sim', model_name: 'sim-asr', has_api_key: false, provider_id: def('sim', 'asr').id });
    expect((await r('provider_type=llm')).data).toMatchObject({ source: 'user_default', provider_name: 'openai', model_name: 'gpt-4o-mini', has_api_key: true });
    expect((await r(`provider_type=llm&agent_id=${agentId}`)).data.source).toBe('user_default');

    const anthropic = def('anthropic', 'llm');
    await call('POST', '/providers/user-config', user.token, { provider_id: anthropic.id, agent_id: agentId, api_key: AGENT_CFG_KEY });
    expect((await r(`provider_type=llm&agent_id=${agentId}`)).data).toMatchObject({ source: 'user_config', provider_name: 'anthropic', model_name: 'claude-3-5-haiku-latest' });

    await call('POST', `/agents/${agentId}/providers`, user.token, { provider_type: 'llm', provider_name: 'openai', model_name: 'gpt-4.1-mini', api_key: 'agent-own-key-1234' });
    const own = await r(`provider_type=llm&agent_id=${agentId}`);
    expect(own.data).toMatchObject({ source: 'agent', provider_name: 'openai', model_name: 'gpt-4.1-mini', has_api_key: true, provider_id: def('openai', 'llm').id });
    expect(own.data).not.toHaveProperty('api_key');

    await call('DELETE', `/agents/${agentId}/providers/llm`, user.token);
    expect((await r(`provider_type=llm&agent_id=${agentId}`)).data.source).toBe('user_config');
  });

  it('a new default replaces the previous default of the same type', async () => {
    const cfg = async (name: string, type: string, extra: Record<string, unknown>) =>
      (await call('POST', '/providers/user-config', user.token, { provider_id: def(name, type).id, ...extra })).body.data;
    const a = await cfg('elevenlabs', 'tts', { api_key: USER_TTS_KEY, is_default: true });
    expect(a.is_default).toBe(true);
    const b = await cfg('cartesia', 'tts', { is_default: true });
    expect(b.is_default).toBe(true);
    const list = (await call('GET', '/providers/user-config', user.token)).body.data;
    expect(list.find((c: { id: string }) => c.id === a.id).is_default).toBe(false);
    await cfg('elevenlabs', 'tts', { is_default: true });
  });

  it('concurrent saves of one (provider, agent) all succeed and leave one configuration', async () => {
    const agent = (await call('POST', '/agents', user.token, { workspace_id: user.workspaceId, name: 'Concurrent config' })).body.data.id;
    const provider = def('elevenlabs', 'tts').id;
    const saves = await Promise.all([1, 2, 3, 4, 5].map((n) => call('POST', '/providers/user-config', user.token, { provider_id: provider, agent_id: agent, model_name: `m${n}` })));
    expect(saves.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(saves.map((r) => r.body.data.id)).size).toBe(1);
    const mine = (await call('GET', '/providers/user-config?limit=100', user.token)).body.data.filter((c: { agent_id: string }) => c.agent_id === agent);
    expect(mine).toHaveLength(1);
  });

  it('concurrent saves of new defaults of one type never fail (they deadlocked: 500)', async () => {
    const fresh = await createTestUser(h);
    const llms = ['openai', 'anthropic'].map((n) => def(n, 'llm').id);
    for (let round = 0; round < 10; round++) {
      const saves = await Promise.all(llms.map((provider_id) => call('POST', '/providers/user-config', fresh.token, { provider_id, is_default: true })));
      expect(saves.map((r) => r.status), `round ${round}`).toEqual([201, 201]);
    }
    const list = (await call('GET', '/providers/user-config', fresh.token)).body.data as Array<{ is_default: boolean }>;
    expect(list.filter((c) => c.is_default)).toHaveLength(1);
  });

  it('a removed member\'s configuration bound to an agent no longer resolves for it', async () => {
    const member = await createTestUser(h);
    const members = `/auth/workspaces/${user.workspaceId}/members`;
    expect((await call('POST', members, user.token, { email: member.email, role: 'member' })).status).toBe(201);
    const agent = (await call('POST', '/agents', user.token, { workspace_id: user.workspaceId, name: 'Departed' })).body.data.id;
    const saved = await call('POST', '/providers/user-config', member.token, { provider_id: def('openai', 'llm').id, agent_id: agent, model_name: 'member-model' });
    expect(saved.status).toBe(201);
    const resolve = async () => (await call('GET', `/providers/resolve?provider_type=llm&agent_id=${agent}`, user.token)).body.data;
    expect(await resolve()).toMatchObject({ source: 'user_config', model_name: 'member-model' });
    expect((await call('DELETE', `${members}/${member.userId}`, user.token)).status).toBe(200);
    // The owner's own default again (gpt-4o-mini, saved above), not the departed member's model.
    expect(await resolve()).toMatchObject({ source: 'user_default', model_name: 'gpt-4o-mini' });
  });

  it('publishing freezes the owner\'s configurations for missing types; the registry default never reaches a call', async () => {
    await call('POST', `/agents/${agentId}/versions/publish`, user.token);
    const live = await h.app.agents.liveConfig(agentId);
    expect(live.providers.llm).toMatchObject({ source: 'user_config', provider_name: 'anthropic', api_key: AGENT_CFG_KEY });
    expect(live.providers.tts).toMatchObject({ source: 'user_default', provider_name: 'elevenlabs', api_key: USER_TTS_KEY, model_name: 'eleven_flash_v2_5' });
    expect(live.providers.asr).toBeNull();
    // later configuration changes do not touch the published version
    await call('POST', '/providers/user-config', user.token, { provider_id: def('cartesia', 'tts').id, is_default: true });
    expect((await h.app.agents.liveConfig(agentId)).providers.tts?.provider_name).toBe('elevenlabs');
  });

  it('no configuration key ever appears in a response or a log line', () => {
    expect(leaked(bodies, SECRETS)).toEqual([]);
    expect(leaked(h.infra.logLines, SECRETS)).toEqual([]);
  });
});
