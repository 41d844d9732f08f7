import { describe, expect, it } from 'vitest';
import { toAgentLiveView, type LiveAgentConfig } from '../../../control-plane/voice/agent-view.js';
import type { FlowNodeJson, SnapshotFlow } from '../../../control-plane/agents/types.js';

function live(over: Partial<LiveAgentConfig> = {}): LiveAgentConfig {
  return {
    agent_id: 'a1',
    workspace_id: 'w1',
    user_id: 'u1',
    version_number: 4,
    published_at: '2026-01-01T00:00:00.000Z',
    name: 'Ava',
    description: '',
    system_prompt: 'Prompt',
    welcome_message: 'Hi',
    language: 'de',
    max_turns: 0,
    connection_type: 'voice',
    interrupt_enabled: false,
    vad_threshold: 0.7,
    silence_timeout_ms: 9000,
    is_active: true,
    allow_human_transfer: false,
    mode: 'single_prompt',
    metadata: { idle_max_attempts: 1 },
    connectors: [],
    providers: { asr: null, llm: null, tts: null },
    tools: [],
    knowledge: { always: [], on_demand_ids: [] },
    flow: null,
    telephony: null,
    ...over,
  };
}

describe('toAgentLiveView: the one adapter from the agents domain', () => {
  it('maps agent fields, keeps only complete providers, drops empty provider settings', () => {
    const view = toAgentLiveView(
      live({
        providers: {
          asr: { provider_type: 'asr', provider_name: 'deepgram', api_key: 'k', model_name: '', base_url: '', source: 'agent' },
          llm: null,
          tts: { provider_type: 'tts', provider_name: '', api_key: '', model_name: '', base_url: '', source: 'agent' },
        },
      }),
    );
    expect(view).toEqual({
      agentId: 'a1',
      workspaceId: 'w1',
      userId: 'u1',
      versionNumber: 4,
      systemPrompt: 'Prompt',
      welcomeMessage: 'Hi',
      language: 'de',
      maxTurns: 0,
      interruptEnabled: false,
      vadThreshold: 0.7,
      silenceTimeoutMs: 9000,
      metadata: { idle_max_attempts: 1 },
      providers: { asr: { provider_name: 'deepgram', api_key: 'k' } },
      tools: [],
      connectorTools: [],
      knowledge: [],
    });
  });

  it('maps HTTP tools (connector-bound tools without an endpoint are left out) and always-on knowledge', () => {
    const view = toAgentLiveView(
      live({
        tools: [
          {
            id: 't1',
            name: 'book',
            description: 'Book a slot',
            function_schema: { type: 'object' },
            endpoint_url: 'https://x.test/book',
            http_method: 'post',
            headers: { 'x-a': '1' },
            auth_type: 'api_key',
            auth_token: 'secret',
            request_body: null,
            response_path: '',
            timeout_ms: 0,
            retry_count: 2,
            connector_binding: null,
          },
          {
            id: 't2',
            name: 'crm',
            description: '',
            function_schema: {},
            endpoint_url: '',
            http_method: '',
            headers: {},
            auth_type: '',
            auth_token: '',
            request_body: null,
            response_path: '',
            timeout_ms: 0,
            retry_count: 0,
            connector_binding: { connection_id: 'c1', actions: [] },
          },
        ],
        knowledge: { always: [{ knowledge_base_id: 'k1', title: 'Hours', content: 'Open 9 to 5.', content_type: 'text/plain' }], on_demand_ids: ['k2'] },
      }),
    );
    expect(view.tools).toEqual([
      {
        id: 't1',
        name: 'book',
        description: 'Book a slot',
        parameters: { type: 'object' },
        endpoint_url: 'https://x.test/book',
        http_method: 'POST',
        headers: { 'x-a': '1' },
        auth_type: 'api_key',
        auth_token: 'secret',
        timeout_ms: 10_000,
        retry_count: 2,
      },
    ]);
    expect(view.knowledge).toEqual([{ id: 'k1', title: 'Hours', content: 'Open 9 to 5.', mode: 'always' }]);
  });
});

describe('toAgentLiveView: flow mode (issue 19)', () => {
  const flow = (nodes: FlowNodeJson[], edges: Array<{ from: string; to: string; condition?: string }>): SnapshotFlow => ({
    id: 'f1',
    version: 2,
    graph: { nodes, edges, start_node_id: 's' },
    variables: [{ name: 'date', type: 'string' }],
    is_valid: true,
    validation_errors: [],
  });

  it('single_prompt mode ignores a stored flow', () => {
    const view = toAgentLiveView(live({ flow: flow([{ id: 's', type: 'start', label: 'S' }], []) }));
    expect(view.flow).toBeUndefined();
    expect(view.flowProblem).toBeUndefined();
  });

  it('flow mode maps nodes (instructions, alias prompt), edges (condition, else the target label; duplicates once) and variables', () => {
    const view = toAgentLiveView(
      live({
        mode: 'flow',
        flow: flow(
          [
            { id: 's', type: 'start', label: 'Hello', config: { prompt: 'Greet.', voice: 'v2', temperature: 0.2, extra: 1 } },
            { id: 'x', type: 'end', label: 'Bye', config: { instructions: 'Say bye.' } },
          ],
          [{ from: 's', to: 'x', condition: 'the caller is done' }, { from: 's', to: 'x' }],
        ),
      }),
    );
    expect(view.flow).toEqual({
      start_node_id: 's',
      nodes: [
        { id: 's', type: 'start', label: 'Hello', instructions: 'Greet.', voice: 'v2', temperature: 0.2 },
        { id: 'x', type: 'end', label: 'Bye', instructions: 'Say bye.' },
      ],
      edges: [{ from: 's', to: 'x', description: 'the caller is done' }],
      variables: [{ name: 'date', type: 'string' }],
    });
  });

  it('flow mode without a flow, or with one the engine cannot run (a condition node published earlier), is a problem', () => {
    expect(toAgentLiveView(live({ mode: 'flow', flow: null })).flowProblem).toMatch(/no flow/);
    const old = toAgentLiveView(live({ mode: 'flow', flow: flow([{ id: 's', type: 'start', label: 'S' }, { id: 'c', type: 'condition', label: 'C' }], [{ from: 's', to: 'c' }]) }));
    expect(old.flow).toBeUndefined();
    expect(old.flowProblem).toMatch(/cannot run/);
  });
});
