/**
 * The same implementation over gRPC (a real @grpc/grpc-js client, proto-loader, snake_case fields)
 * and Connect JSON: lifecycle create -> configure -> publish -> edit draft -> publish -> rollback,
 * error codes, pagination, and no secret in any response.
 */
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcClient } from '../helpers/grpc.js';
import { createMemoryItem, createTestUser, fromStruct, leaked, restClient, startAgentsApp, toPbValue, toStruct, type AgentsApp, type TestUser } from '../unit/agents/support.js';
import { MAX_INPUT_DEPTH } from '../../control-plane/http/input.js';

const LLM_KEY = 'sk-grpc-SECRET-aaaa-0001';
const TOOL_TOKEN = 'grpc-tool-SECRET-bbbb-0002';
const CARRIER_TOKEN = 'grpc-carrier-SECRET-cccc-0003';
const USER_KEY = 'grpc-user-config-SECRET-dddd-0004';
const SECRETS = [LLM_KEY, TOOL_TOKEN, CARRIER_TOKEN, USER_KEY];

let h: AgentsApp;
let owner: TestUser;
let other: TestUser;
let agents: ReturnType<typeof grpcClient>;
let config: ReturnType<typeof grpcClient>;
let registry: ReturnType<typeof grpcClient>;
const responses: string[] = [];

type R = Record<string, any>;
async function rpc(client: ReturnType<typeof grpcClient>, method: string, req: unknown, token?: string): Promise<R> {
  const res = await client.call<R>(method, req, token);
  responses.push(JSON.stringify(res));
  return res;
}
async function rpcError(client: ReturnType<typeof grpcClient>, method: string, req: unknown, token?: string): Promise<ServiceError> {
  try {
    await client.call(method, req, token);
  } catch (e) {
    return e as ServiceError;
  }
  throw new Error(`${method} succeeded unexpectedly`);
}

beforeAll(async () => {
  h = await startAgentsApp();
  owner = await createTestUser(h);
  other = await createTestUser(h);
  agents = grpcClient(h.port, 'AgentService', 'voiceplane/v1/agents.proto');
  config = grpcClient(h.port, 'AgentConfigService', 'voiceplane/v1/agents.proto');
  registry = grpcClient(h.port, 'ProviderRegistryService', 'voiceplane/v1/providers.proto');
});

afterAll(async () => {
  agents?.close();
  config?.close();
  registry?.close();
  await h?.close();
});

describe('agents over gRPC', () => {
  let agentId = '';

  it('runs the full lifecycle', async () => {
    const a = await rpc(agents, 'CreateAgent', { workspace_id: owner.workspaceId, name: 'Grpc agent', system_prompt: 'grpc v1', metadata: toStruct({ amd_enabled: true }) }, owner.token);
    agentId = a.id;
    expect(a).toMatchObject({ name: 'Grpc agent', language: 'en', max_turns: 50, mode: 'single_prompt', live_version: 0 });
    expect(fromStruct(a.metadata)).toEqual({ amd_enabled: true });

    const p = await rpc(config, 'UpsertAgentProvider', { agent_id: agentId, provider_type: 'llm', provider_name: 'openai', api_key: LLM_KEY, model_name: 'gpt-4o-mini' }, owner.token);
    expect(p.api_key).toBe('••••••••0001');
    await rpc(config, 'UpsertAgentProvider', { agent_id: agentId, provider_type: 'asr', provider_name: 'sim' }, owner.token);
    await rpc(config, 'UpsertAgentProvider', { agent_id: agentId, provider_type: 'tts', provider_name: 'sim' }, owner.token);

    const t = await rpc(
      config,
      'CreateTool',
      {
        agent_id: agentId,
        name: 'weather',
        endpoint_url: 'https://example.com/weather',
        function_schema: toStruct({ type: 'object', properties: { city: { type: 'string' } } }),
        auth_token: TOOL_TOKEN,
        request_body: toPbValue('city={{city}}'),
      },
      owner.token,
    );
    expect(t).toMatchObject({ name: 'weather', auth_token: '••••••••0002', http_method: 'POST', timeout_ms: 10000 });
    expect(fromStruct(t.function_schema)).toEqual({ type: 'object', properties: { city: { type: 'string' } } });

    const kb = await createMemoryItem(h, owner.token, owner.workspaceId, 'FAQ', 'Answers.');
    const b = await rpc(config, 'CreateKnowledgeBaseBinding', { agent_id: agentId, knowledge_base_id: kb, mode: 'always' }, owner.token);
    expect(b).toMatchObject({ knowledge_base_id: kb, mode: 'always', is_active: true });

    const f = await rpc(
      config,
      'PutFlow',
      { agent_id: agentId, graph: { nodes: [{ id: 's', type: 'start', label: 'S' }, { id: 'p', type: 'prompt', label: 'P' }], edges: [{ from: 's', to: 'p' }], start_node_id: 's' } },
      owner.token,
    );
    expect(f).toMatchObject({ is_valid: true, version: 1 });

    const tel = await rpc(config, 'PutAgentTelephony', { agent_id: agentId, carrier_phone_number: '+33142685300', carrier_auth_token: CARRIER_TOKEN }, owner.token);
    expect(tel).toMatchObject({ agent_id: agentId, carrier_phone_number: '+33142685300', carrier_auth_token: '••••••••0003', call_direction: 'both' });

    const v1 = await rpc(config, 'PublishAgent', { agent_id: agentId }, owner.token);
    expect(v1).toMatchObject({ agent_id: agentId, version_number: 1 });
    const live1 = await h.app.agents.liveConfig(agentId);
    expect(live1).toMatchObject({ version_number: 1, system_prompt: 'grpc v1', telephony: { carrier_auth_token: CARRIER_TOKEN } });
    expect(live1.providers.llm?.api_key).toBe(LLM_KEY);
    expect(live1.tools[0]).toMatchObject({ auth_token: TOOL_TOKEN, request_body: 'city={{city}}' });
    expect(live1.knowledge.always[0]).toMatchObject({ knowledge_base_id: kb, content: 'Answers.' });

    await rpc(agents, 'UpdateAgent', { id: agentId, system_prompt: 'grpc v2' }, owner.token);
    expect(await h.app.agents.liveConfig(agentId)).toEqual(live1);

    expect(await rpc(config, 'PublishAgent', { agent_id: agentId }, owner.token)).toMatchObject({ version_number: 2 });
    expect((await h.app.agents.liveConfig(agentId)).system_prompt).toBe('grpc v2');
    const rb = await rpc(config, 'RollbackAgent', { agent_id: agentId, version_number: 1 }, owner.token);
    expect(rb).toMatchObject({ version_number: 1, published_at: v1.published_at });
    expect(await h.app.agents.liveConfig(agentId)).toEqual(live1);

    const versions = await rpc(config, 'ListAgentVersions', { agent_id: agentId }, owner.token);
    expect(versions.versions.map((v: R) => [v.version_number, v.is_live])).toEqual([
      [2, false],
      [1, true],
    ]);
    expect(versions.meta).toEqual({ page: 1, per_page: 20, total: 2, total_pages: 1 });

    const detail = await rpc(agents, 'GetAgent', { id: agentId }, owner.token);
    expect(detail.agent.system_prompt).toBe('grpc v2');
    expect(detail.providers).toHaveLength(3);
    expect(detail.telephony.carrier_auth_token).toBe('••••••••0003');
    const look = await rpc(agents, 'LookupAgentByPhone', { phone_number: '+33142685300' }, owner.token);
    expect(look.agent.id).toBe(agentId);
  });

  it('maps errors to gRPC status codes', async () => {
    expect((await rpcError(agents, 'GetAgent', { id: agentId })).code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect((await rpcError(agents, 'GetAgent', { id: agentId }, other.token)).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await rpcError(agents, 'UpdateAgent', { id: agentId, name: 'stolen' }, other.token)).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await rpcError(agents, 'GetAgent', { id: 'not-a-uuid' }, owner.token)).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await rpcError(config, 'RollbackAgent', { agent_id: agentId, version_number: 9 }, owner.token)).code).toBe(GrpcStatus.NOT_FOUND);
    const bad = await rpcError(config, 'CreateTool', { agent_id: agentId, name: 'bad name!', endpoint_url: 'https://x.example' }, owner.token);
    expect(bad.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(bad.details).toContain('name');
    const taken = await rpcError(config, 'CreateTool', { agent_id: agentId, name: 'weather', endpoint_url: 'https://x.example' }, owner.token);
    expect(taken.code).toBe(GrpcStatus.ALREADY_EXISTS);
    const schema = await rpcError(config, 'CreateTool', { agent_id: agentId, name: 'w2', endpoint_url: 'https://x.example', function_schema: toStruct({ type: 12 }) }, owner.token);
    expect(schema.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(schema.details).toContain('function_schema');
    expect((await rpcError(config, 'UpsertAgentProvider', { agent_id: agentId, provider_type: 'video', provider_name: 'x' }, owner.token)).details).toContain('provider_type');
    expect((await rpcError(agents, 'ListAgents', { limit: 0 }, owner.token)).code).toBe(GrpcStatus.INVALID_ARGUMENT);
    // A 409 by meaning: a state the request does not fit is FAILED_PRECONDITION, a taken id ALREADY_EXISTS.
    const unconnected = await rpcError(config, 'CreateTool', { agent_id: agentId, connector: 'hubspot' }, owner.token);
    expect([unconnected.code, unconnected.details]).toEqual([GrpcStatus.FAILED_PRECONDITION, expect.stringContaining('')]);
    const chosen = '0190a000-0000-7000-8000-0000000000c1';
    await rpc(agents, 'CreateAgent', { id: chosen, workspace_id: other.workspaceId, name: 'Chosen id' }, other.token);
    expect((await rpcError(agents, 'CreateAgent', { id: chosen, workspace_id: other.workspaceId, name: 'Another body' }, other.token)).code).toBe(GrpcStatus.ALREADY_EXISTS);
  });

  it('an unknown method is UNIMPLEMENTED (a gRPC status, not an HTTP 404)', async () => {
    const err = await new Promise<ServiceError>((resolve, reject) =>
      agents.client.makeUnaryRequest('/voiceplane.v1.AgentService/Nope', (x: Buffer) => x, (x: Buffer) => x, Buffer.alloc(0), new Metadata(), { deadline: Date.now() + 5000 }, (e) =>
        e ? resolve(e) : reject(new Error('answered')),
      ),
    );
    expect([err.code, err.details]).toEqual([GrpcStatus.UNIMPLEMENTED, 'unknown method /voiceplane.v1.AgentService/Nope']);
    expect(err.details).toBe('unknown method /voiceplane.v1.AgentService/Nope');
  });

  it('lists with pagination meta', async () => {
    for (let i = 0; i < 4; i++) await rpc(agents, 'CreateAgent', { workspace_id: owner.workspaceId, name: `bulk ${i}` }, owner.token);
    const page = await rpc(agents, 'ListAgents', { limit: 2, offset: 2 }, owner.token);
    expect(page.agents).toHaveLength(2);
    expect(page.meta).toEqual({ page: 2, per_page: 2, total: 5, total_pages: 3 });
  });

  it('free-form JSON nested as deep as REST accepts still reads back over gRPC (standard decoders stop at 100 message levels)', async () => {
    const nested = (levels: number) => {
      let v: Record<string, unknown> = { leaf: 'x' };
      for (let i = 1; i < levels; i++) v = { d: v };
      return v;
    };
    const call = restClient(h);
    // The deepest the edge takes: the request message, its metadata field, then the JSON levels.
    let deepest = 0;
    for (let levels = MAX_INPUT_DEPTH; levels > 0; levels--) {
      const r = await call('POST', '/agents', other.token, { workspace_id: other.workspaceId, name: `deep ${levels}`, metadata: nested(levels) });
      if (r.status === 201) {
        deepest = levels;
        const got = await rpc(agents, 'GetAgent', { id: r.body.data.id }, other.token);
        expect(got.agent.id).toBe(r.body.data.id);
        break;
      }
      expect(r.status).toBe(400);
    }
    expect(deepest).toBeGreaterThanOrEqual(24);
    // And every list that carries it.
    const page = await rpc(agents, 'ListAgents', { workspace_id: other.workspaceId, limit: 100 }, other.token);
    expect(page.agents.length).toBeGreaterThan(0);
  });

  it('serves the provider registry and never returns a user-config key', async () => {
    const defs = await rpc(registry, 'ListProviderDefinitions', { provider_type: 'llm' }, owner.token);
    const sim = defs.providers.find((d: R) => d.name === 'sim');
    expect(sim).toMatchObject({ provider_type: 'llm', is_active: true });
    const openai = defs.providers.find((d: R) => d.name === 'openai');
    const cfg = await rpc(registry, 'CreateUserProviderConfig', { provider_id: openai.id, api_key: USER_KEY, model_name: 'gpt-4o', is_default: true }, owner.token);
    expect(cfg).toMatchObject({ provider_id: openai.id, provider_type: 'llm', has_api_key: true, is_default: true });
    expect(cfg).not.toHaveProperty('api_key');
    const list = await rpc(registry, 'ListUserProviderConfigs', {}, owner.token);
    expect(list.configs).toHaveLength(1);
    const resolved = await rpc(registry, 'ResolveProvider', { provider_type: 'llm' }, owner.token);
    expect(resolved).toMatchObject({ source: 'user_default', provider_name: 'openai', model_name: 'gpt-4o', has_api_key: true });
    const forAgent = await rpc(registry, 'ResolveProvider', { agent_id: agentId, provider_type: 'llm' }, owner.token);
    expect(forAgent).toMatchObject({ source: 'agent', provider_name: 'openai' });
  });

  it('answers Connect JSON on the same port', async () => {
    const res = await fetch(`http://127.0.0.1:${h.port}/voiceplane.v1.AgentConfigService/GetAgentMode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ agentId }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ mode: 'single_prompt' });
  });

  it('the access line of a gRPC call carries its gRPC status (its HTTP status is 200 either way)', () => {
    const lines = h.infra.logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request' && String(l.path).startsWith('/voiceplane.v1.'));
    expect(lines.find((l) => l.path === '/voiceplane.v1.AgentService/GetAgent' && l.grpcStatus === GrpcStatus.UNAUTHENTICATED)).toMatchObject({ status: 200 });
    expect(lines.find((l) => l.path === '/voiceplane.v1.AgentService/Nope')).toMatchObject({ grpcStatus: GrpcStatus.UNIMPLEMENTED });
    expect(lines.some((l) => l.path === '/voiceplane.v1.AgentService/CreateAgent' && l.grpcStatus === GrpcStatus.OK)).toBe(true);
  });

  it('no secret in any gRPC response or log line', () => {
    expect(leaked(responses, SECRETS)).toEqual([]);
    expect(leaked(h.infra.logLines, SECRETS)).toEqual([]);
  });
});
