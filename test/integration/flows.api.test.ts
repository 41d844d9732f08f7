/**
 * What the API accepts, a call gets (issue 19): an agent configured over REST (providers, knowledge
 * bindings, a flow with node config and variables, `mode: flow`), published, then a voice session
 * started through the public route. The session config the control plane stores for the engine
 * carries the flow, the always-on knowledge in the prompt and the on-demand knowledge as the
 * search scope. A flow with a node type the engine does not run is refused before it can be
 * published.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { createMemoryItem, createTestUser, restClient, startAgentsApp, type AgentsApp, type TestUser } from '../unit/agents/support.js';
import { api } from '../helpers/accounts.js';

let h: AgentsApp;
let owner: TestUser;
let call: ReturnType<typeof restClient>;

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  owner = await createTestUser(h);
  // One live engine node, so session start can place the session (nothing connects to it): listed,
  // and serving its commands (a listed node nobody serves is a dead one and gets no session).
  await h.infra.registry.nodes.heartbeat({ nodeId: 'flows-node', wsUrl: 'ws://127.0.0.1:1', load: 0, capacity: 10, updatedAtMs: Date.now() }, 60_000);
  await h.infra.registry.commands.serveCommands('flows-node', async () => ({ status: 'skipped' }));
});

afterAll(async () => {
  await h?.close();
});

const GRAPH = {
  start_node_id: 'greet',
  nodes: [
    { id: 'greet', type: 'start', label: 'Greet', config: { instructions: 'Greet the caller.' } },
    { id: 'collect', type: 'prompt', label: 'Collect', config: { instructions: 'Ask for the date.', collect: ['date'], temperature: 0.3 } },
    { id: 'bye', type: 'end', label: 'Goodbye', config: { instructions: 'Thank {{customer}} and say goodbye.' } },
  ],
  edges: [
    { from: 'greet', to: 'collect', condition: 'the caller wants to book' },
    { from: 'collect', to: 'bye' },
  ],
};

describe('a flow agent configured over REST runs as configured', () => {
  it('publish, start a session: the stored config carries the flow and both kinds of knowledge', async () => {
    const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Booker', system_prompt: 'You book tables.' });
    expect(created.status).toBe(201);
    const agentId = created.body.data.id as string;
    for (const kind of ['asr', 'llm', 'tts']) expect((await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: kind, provider_name: 'sim' })).status).toBe(200);
    const hours = await createMemoryItem(h, owner.token, owner.workspaceId, 'Hours', 'Open noon to eleven.');
    const refunds = await createMemoryItem(h, owner.token, owner.workspaceId, 'Refunds', 'Refunds within 30 days.');
    expect((await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: hours, mode: 'always' })).status).toBe(201);
    expect((await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: refunds, mode: 'on_demand' })).status).toBe(201);
    const flow = await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: GRAPH, variables: [{ name: 'date', type: 'string' }] });
    expect(flow.status).toBe(200);
    expect(flow.body.data).toMatchObject({ is_valid: true, validation_errors: [] });
    expect((await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'flow' })).status).toBe(200);
    expect((await call('POST', `/agents/${agentId}/versions/publish`, owner.token)).status).toBe(200);

    const start = await api(h, 'POST', '/api/v1/voice/sessions/start', { body: { agent_id: agentId, dynamic_variables: { customer: 'Kim' } } });
    expect(start.status).toBe(200);
    const stored = await h.infra.registry.sessions.getSession(start.body.session_id as string);
    const config = stored!.config as SessionConfig;
    expect(config.flow).toEqual({
      start_node_id: 'greet',
      nodes: [
        { id: 'greet', type: 'start', label: 'Greet', instructions: 'Greet the caller.' },
        { id: 'collect', type: 'prompt', label: 'Collect', instructions: 'Ask for the date.', collect: ['date'], temperature: 0.3 },
        // Substituted by the engine when the node is entered (collected variables first).
        { id: 'bye', type: 'end', label: 'Goodbye', instructions: 'Thank {{customer}} and say goodbye.' },
      ],
      edges: [
        { from: 'greet', to: 'collect', description: 'the caller wants to book' },
        { from: 'collect', to: 'bye', description: 'go to: Goodbye' },
      ],
      variables: [{ name: 'date', type: 'string' }],
    });
    expect(config.system_prompt).toBe('You book tables.\n\n## Knowledge\n### Hours\nOpen noon to eleven.');
    expect(config.knowledge_search).toEqual({ item_ids: [refunds], text_search_config: 'english' });
  });

  it('a node type the engine does not run is a validation error, and publishing in flow mode refuses it', async () => {
    const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Old flow' });
    const agentId = created.body.data.id as string;
    const graph = { start_node_id: 's', nodes: [{ id: 's', type: 'start', label: 'S' }, { id: 'c', type: 'condition', label: 'C' }], edges: [{ from: 's', to: 'c' }] };
    const validated = await call('POST', `/agents/${agentId}/flow/validate`, owner.token, { graph });
    expect(validated.body.data.is_valid).toBe(false);
    expect(validated.body.data.errors).toEqual([expect.objectContaining({ code: 'UNKNOWN_NODE_TYPE', node_ids: ['c'] })]);
    await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph, variables: [] });
    await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'flow' });
    const pub = await call('POST', `/agents/${agentId}/versions/publish`, owner.token);
    expect(pub.status).toBe(409);
  });

  it("publishing refuses a tool node naming a tool the agent does not have (it failed at call time); adding the tool lets it through", async () => {
    const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Tool flow' });
    const agentId = created.body.data.id as string;
    const graph = {
      start_node_id: 's',
      nodes: [{ id: 's', type: 'start', label: 'S' }, { id: 't', type: 'tool', label: 'T', config: { tool_name: 'lookup_order' } }, { id: 'p', type: 'prompt', label: 'P' }],
      edges: [{ from: 's', to: 't' }, { from: 't', to: 'p' }],
    };
    expect((await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph, variables: [] })).body.data.is_valid).toBe(true);
    await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'flow' });
    const refused = await call('POST', `/agents/${agentId}/versions/publish`, owner.token);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toEqual([{ field: 'flow', problem: expect.stringContaining('t (lookup_order)') }]);
    expect((await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'lookup_order', endpoint_url: 'https://example.com/orders' })).status).toBe(201);
    expect((await call('POST', `/agents/${agentId}/versions/publish`, owner.token)).status).toBe(200);
  });

  it("a tool may not take a name of the platform's own functions; one saved so before is still editable but cannot be a flow node's tool", { timeout: 20_000 }, async () => {
    const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Reserved names' });
    const agentId = created.body.data.id as string;
    for (const name of ['search_knowledge', 'set_variables', 'transfer_to_human', 'go_to_confirm']) {
      const r = await call('POST', `/agents/${agentId}/tools`, owner.token, { name, endpoint_url: 'https://example.com/x' });
      expect(r.status, name).toBe(400);
      expect(r.body.error.details[0].field).toBe('name');
    }
    const ok = (await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'lookup', endpoint_url: 'https://example.com/x' })).body.data;
    expect((await call('PUT', `/agents/${agentId}/tools/${ok.id}`, owner.token, { name: 'set_variables' })).status).toBe(400);
    // One saved before the names were reserved: an edit that keeps its name is accepted.
    await h.infra.sql`update agent_tools set name = 'set_variables' where id = ${ok.id}`;
    const edit = await call('PUT', `/agents/${agentId}/tools/${ok.id}`, owner.token, { name: 'set_variables', description: 'kept' });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
    const graph = {
      start_node_id: 's',
      nodes: [{ id: 's', type: 'start', label: 'S' }, { id: 't', type: 'tool', label: 'T', config: { tool_name: 'set_variables' } }, { id: 'p', type: 'prompt', label: 'P' }],
      edges: [{ from: 's', to: 't' }, { from: 't', to: 'p' }],
    };
    await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph, variables: [] });
    await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'flow' });
    const refused = await call('POST', `/agents/${agentId}/versions/publish`, owner.token);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toEqual([{ field: 'flow', problem: expect.stringContaining('t (set_variables)') }]);
  });

  it('auth_type none sent explicitly clears the stored token; with a token in the same request it is 400', async () => {
    const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Auth none' });
    const agentId = created.body.data.id as string;
    const t = (await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'basic_one', endpoint_url: 'https://example.com/x', auth_type: 'basic', auth_token: 'user:pass-123' })).body.data;
    expect(t.auth_token).toBe('••••••••-123');
    const both = await call('PUT', `/agents/${agentId}/tools/${t.id}`, owner.token, { auth_type: 'none', auth_token: 'other-token-1' });
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].field).toBe('auth_type');
    const none = await call('PUT', `/agents/${agentId}/tools/${t.id}`, owner.token, { auth_type: 'none' });
    expect(none.body.data).toMatchObject({ auth_type: 'none', auth_token: '' });
  });
});
