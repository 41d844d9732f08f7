/**
 * buildSessionConfig: known inputs -> exact SessionConfig. Errors are asserted by `.code` and
 * `details` (never message text).
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import type { SessionConfig } from '../../../shared/voice/session-config.js';
import type { AgentLiveView } from '../../../control-plane/voice/agent-view.js';
import {
  buildSessionConfig,
  idleMaxAttempts,
  renderCallDetails,
  resolveMaxTurns,
  planKnowledge,
  KNOWLEDGE_PROMPT_TOKEN_BUDGET,
  validateStartRequest,
  type StartRequest,
} from '../../../control-plane/voice/build-config.js';

const IDS = { sessionId: 'sess_abc', nowMs: 1_700_000_000_000 };

function agent(over: Partial<AgentLiveView> = {}): AgentLiveView {
  return {
    agentId: 'agent-1',
    workspaceId: 'ws-1',
    userId: 'owner-1',
    versionNumber: 3,
    systemPrompt: 'You are {{agent_name|Ava}}, helping {{customer}}.',
    welcomeMessage: 'Hi {{customer|there}}, this is {{agent_name|Ava}}.',
    language: 'en',
    maxTurns: 20,
    interruptEnabled: true,
    vadThreshold: 0.6,
    silenceTimeoutMs: 8000,
    metadata: { idle_max_attempts: 3, amd_enabled: true },
    providers: {
      asr: { provider_name: 'deepgram', api_key: 'dg-key', model_name: 'nova-2' },
      llm: { provider_name: 'openai', api_key: 'oa-key', model_name: 'gpt-4o-mini' },
      tts: { provider_name: 'elevenlabs', api_key: 'el-key', model_name: 'eleven_turbo', voice: 'rachel', base_url: 'https://el.example' },
    },
    tools: [
      {
        id: 'tool-1',
        name: 'lookup',
        description: 'Look up an order',
        parameters: { type: 'object', properties: { id: { type: 'string' } } },
        endpoint_url: 'https://api.example/orders',
        http_method: 'GET',
        headers: {},
        auth_type: 'api_key',
        auth_token: 'tok',
        timeout_ms: 5000,
        retry_count: 1,
      },
    ],
    connectorTools: [],
    knowledge: [
      { id: 'kb-always', title: 'Hours', content: 'Open 9 to 5.', mode: 'always' },
      { id: 'kb-demand', title: 'Refunds', content: 'Refunds within 30 days.', mode: 'on_demand' },
    ],
    ...over,
  };
}

function build(req: Partial<StartRequest>, a: AgentLiveView = agent()): SessionConfig {
  return buildSessionConfig(a, { agent_id: 'agent-1', ...req }, IDS);
}

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    return e as AppError;
  }
  throw new Error('expected an error');
}

describe('buildSessionConfig: the full resolved config', () => {
  it('a minimal request resolves every field from the agent, with defaults', () => {
    expect(build({})).toEqual({
      session_id: 'sess_abc',
      agent_id: 'agent-1',
      workspace_id: 'ws-1',
      user_id: 'owner-1',
      agent_version: 3,
      system_prompt: 'You are Ava, helping .\n\n## Knowledge\n### Hours\nOpen 9 to 5.',
      welcome_message: 'Hi there, this is Ava.',
      welcome_mode: 'auto',
      language: 'en',
      max_turns: 20,
      interrupt_enabled: true,
      vad_threshold: 0.6,
      silence_timeout_ms: 8000,
      idle_max_attempts: 3,
      providers: {
        asr: { provider_name: 'deepgram', api_key: 'dg-key', model_name: 'nova-2' },
        llm: { provider_name: 'openai', api_key: 'oa-key', model_name: 'gpt-4o-mini' },
        tts: { provider_name: 'elevenlabs', api_key: 'el-key', model_name: 'eleven_turbo', voice: 'rachel', base_url: 'https://el.example' },
      },
      tools: agent().tools,
      connector_tools: [],
      agent_metadata: { idle_max_attempts: 3, amd_enabled: true },
      session_metadata: {},
      dynamic_variables: {},
      call_direction: 'inbound',
      connection_type: 'websocket',
      // The on_demand base is searchable, in the agent's language.
      knowledge_search: { item_ids: ['kb-demand'], text_search_config: 'english' },
      created_at_ms: 1_700_000_000_000,
    } satisfies SessionConfig);
  });

  it('a request using every field', () => {
    const cfg = build({
      user_id: 'caller-7',
      workspace_id: 'ws-1',
      welcome_message: 'Hello {{customer}}!',
      welcome_mode: 'tts',
      system_prompt: 'Be brief with {{customer}}.',
      language: 'de',
      voice: 'ignored-because-tts_voice-wins',
      tts_voice: 'bella',
      tts_model: 'eleven_flash',
      dynamic_variables: { customer: 'Jo', order: 42, vip: true },
      context: '  Returning customer.  ',
      user_background: 'Prefers email.',
      call_details: { order_id: 'A-1', items: 2 },
      knowledge_base_ids: ['kb-demand', 'kb-unknown'],
      kb_mode: 'system_context',
      max_turns: 5,
      session_metadata: { crm_id: 'c-9' },
      call_direction: 'outbound',
      connection_type: 'twilio',
      telephony_provider: 'twilio',
      call_id: 'call-123',
      from_number: '+14155550101',
      to_number: '+14155550199',
    });
    expect(cfg).toEqual({
      session_id: 'sess_abc',
      agent_id: 'agent-1',
      workspace_id: 'ws-1',
      user_id: 'caller-7',
      agent_version: 3,
      system_prompt: [
        'You are Ava, helping Jo.',
        'Be brief with Jo.',
        '## Context\nReturning customer.',
        '## User background\nPrefers email.',
        '## Call details\norder_id: A-1\nitems: 2',
        '## Knowledge\n### Hours\nOpen 9 to 5.\n\n### Refunds\nRefunds within 30 days.',
      ].join('\n\n'),
      welcome_message: 'Hello Jo!',
      welcome_mode: 'tts',
      language: 'de',
      max_turns: 5,
      interrupt_enabled: true,
      vad_threshold: 0.6,
      silence_timeout_ms: 8000,
      idle_max_attempts: 3,
      providers: {
        asr: { provider_name: 'deepgram', api_key: 'dg-key', model_name: 'nova-2' },
        llm: { provider_name: 'openai', api_key: 'oa-key', model_name: 'gpt-4o-mini' },
        tts: { provider_name: 'elevenlabs', api_key: 'el-key', model_name: 'eleven_flash', voice: 'bella', base_url: 'https://el.example' },
      },
      tools: agent().tools,
      connector_tools: [],
      agent_metadata: { idle_max_attempts: 3, amd_enabled: true },
      session_metadata: { crm_id: 'c-9' },
      dynamic_variables: { customer: 'Jo', order: '42', vip: 'true' },
      call_direction: 'outbound',
      connection_type: 'twilio',
      telephony_provider: 'twilio',
      call_id: 'call-123',
      from_number: '+14155550101',
      to_number: '+14155550199',
      created_at_ms: 1_700_000_000_000,
    } satisfies SessionConfig);
  });

  it('does not alias the agent view (the stored config is independent)', () => {
    const a = agent();
    const cfg = build({}, a);
    cfg.providers.tts.voice = 'changed';
    cfg.agent_metadata.x = 1;
    expect(a.providers.tts!.voice).toBe('rachel');
    expect(a.metadata).not.toHaveProperty('x');
  });
});

describe('dynamic variables', () => {
  it('substitutes {{key}} and {{key|default}} in prompt and greeting; defaults apply to missing and empty values', () => {
    const cfg = build({ dynamic_variables: { agent_name: 'Max', customer: '' } });
    expect(cfg.system_prompt.split('\n\n')[0]).toBe('You are Max, helping .');
    expect(cfg.welcome_message).toBe('Hi there, this is Max.');
  });

  it('stringifies non-string values and skips nulls', () => {
    const cfg = build({ dynamic_variables: { customer: { name: 'Jo' }, agent_name: null } });
    expect(cfg.welcome_message).toBe('Hi {"name":"Jo"}, this is Ava.');
    expect(cfg.dynamic_variables).toEqual({ customer: '{"name":"Jo"}' });
  });

  it('leaves context, background, call details and knowledge verbatim (data, not templates)', () => {
    const cfg = build({ dynamic_variables: { customer: 'Jo' }, context: 'Say {{customer}} literally', system_message_override: 'X' });
    expect(cfg.system_prompt).toBe('X\n\n## Context\nSay {{customer}} literally\n\n## Knowledge\n### Hours\nOpen 9 to 5.');
  });
});

describe('override precedence', () => {
  it('greeting: welcome_message_override > welcome_message > agent', () => {
    expect(build({ welcome_message_override: 'Forced {{customer|you}}', welcome_message: 'Req' }).welcome_message).toBe('Forced you');
    expect(build({ welcome_message: 'Req' }).welcome_message).toBe('Req');
    expect(build({ welcome_message: '   ' }).welcome_message).toBe('Hi there, this is Ava.');
    expect(build({}, agent({ welcomeMessage: '' })).welcome_message).toBe('');
  });

  it('welcome_mode none answers an empty greeting', () => {
    const cfg = build({ welcome_mode: 'none', welcome_message_override: 'Forced' });
    expect(cfg.welcome_mode).toBe('none');
    expect(cfg.welcome_message).toBe('');
  });

  it('prompt: system_message_override replaces the agent prompt; system_prompt appends to either', () => {
    expect(build({ system_message_override: 'Only {{customer|me}}', system_prompt: 'Extra.' }, agent({ knowledge: [] })).system_prompt).toBe(
      'Only me\n\nExtra.',
    );
    expect(build({ system_prompt: 'Extra.' }, agent({ knowledge: [] })).system_prompt).toBe('You are Ava, helping .\n\nExtra.');
  });

  it('tts: tts_voice > voice > agent voice; tts_model replaces the model', () => {
    expect(build({ voice: 'v1' }).providers.tts.voice).toBe('v1');
    expect(build({ voice: 'v1', tts_voice: 'v2' }).providers.tts.voice).toBe('v2');
    expect(build({}).providers.tts.voice).toBe('rachel');
  });

  it('tts_provider naming another vendor drops the agent vendor key, URL, model and voice', () => {
    expect(build({ tts_provider: 'sim' }).providers.tts).toEqual({ provider_name: 'sim' });
    expect(build({ tts_provider: 'cartesia', tts_model: 'sonic', voice: 'kim' }).providers.tts).toEqual({ provider_name: 'cartesia', model_name: 'sonic', voice: 'kim' });
    // Same vendor (any case): settings kept.
    expect(build({ tts_provider: 'ElevenLabs' }).providers.tts.api_key).toBe('el-key');
  });

  it('tts_provider naming no vendor we support is 400 naming it (the socket refused the call later)', () => {
    expect(() => build({ tts_provider: 'nosuchprovider' })).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', details: [{ field: 'tts_provider', problem: expect.stringMatching(/^must be one of .*elevenlabs/) }] }));
  });

  it('language: the request wins', () => {
    expect(build({ language: 'fr' }).language).toBe('fr');
    expect(build({ language: '' }).language).toBe('en');
  });

  it('user_id: the request wins over the agent owner; neither -> absent', () => {
    expect(build({ user_id: 'u2' }).user_id).toBe('u2');
    expect(build({}, agent({ userId: undefined }))).not.toHaveProperty('user_id');
  });
});

describe('max_turns and idle attempts', () => {
  it.each([
    // [agent cap, requested, expected]
    [20, undefined, 20],
    [20, 5, 5],
    [20, 50, 20],
    [0, undefined, 100],
    [0, 500, 500],
  ])('agent %s, request %s -> %s', (cap, requested, expected) => {
    expect(resolveMaxTurns(cap, requested)).toBe(expected);
  });

  it.each([
    [{ idle_max_attempts: 3 }, 3],
    [{ idle_max_attempts: 0 }, 0],
    [{ idle_max_attempts: '4' }, 4],
    [{}, 2],
    [{ idle_max_attempts: -1 }, 2],
    [{ idle_max_attempts: 1.5 }, 2],
    [{ idle_max_attempts: 'lots' }, 2],
    [{ idle_max_attempts: 1000 }, 2],
  ])('metadata %j -> %s idle attempts', (meta, expected) => {
    expect(idleMaxAttempts(meta)).toBe(expected);
  });
});

describe('context folding and knowledge', () => {
  it('call_details must be a string or an object on every transport (gRPC/Connect and telephony land in the same check)', () => {
    for (const bad of [5, true, ['a']]) {
      try {
        validateStartRequest({ agent_id: 'a', call_details: bad });
        expect.unreachable(`${JSON.stringify(bad)} passed`);
      } catch (e) {
        expect((e as AppError).details?.[0]?.field).toBe('call_details');
      }
    }
    for (const ok of ['text', { a: 1 }, null, undefined]) expect(() => validateStartRequest({ agent_id: 'a', call_details: ok })).not.toThrow();
  });

  it('renders call_details strings and objects', () => {
    expect(renderCallDetails('  reason: billing ')).toBe('reason: billing');
    expect(renderCallDetails({ a: 'x', b: 2, c: null, d: { e: 1 } })).toBe('a: x\nb: 2\nd: {"e":1}');
    expect(renderCallDetails([1, 2])).toBe('[1,2]');
    expect(renderCallDetails(undefined)).toBe('');
  });

  it('kb_mode tool folds only always-on knowledge and leaves named bases to search; unknown ids are ignored', () => {
    const cfg = build({ knowledge_base_ids: ['kb-demand', 'nope'], kb_mode: 'tool' });
    expect(cfg.system_prompt).toContain('### Hours');
    expect(cfg.system_prompt).not.toContain('Refunds');
    expect(cfg.knowledge_search).toEqual({ item_ids: ['kb-demand'], text_search_config: 'english' });
  });

  it('kb_mode system_context folds a named on_demand base into the prompt instead of searching it', () => {
    const cfg = build({ knowledge_base_ids: ['kb-demand'] });
    expect(cfg.system_prompt).toContain('### Refunds\nRefunds within 30 days.');
    expect(cfg.knowledge_search).toBeUndefined();
  });

  it('search uses the language of the session (unknown languages: simple)', () => {
    expect(build({ language: 'de-DE' }).knowledge_search?.text_search_config).toBe('german');
    expect(build({ language: 'xx' }).knowledge_search?.text_search_config).toBe('simple');
  });

  it('always-on knowledge respects the prompt budget: entries that do not fit become searchable', () => {
    const big = (id: string, chars: number) => ({ id, title: id, content: 'x'.repeat(chars), mode: 'always' as const });
    // 4 chars per estimated token: 3000 + 3000 fit in 2000 tokens, the third 3000 does not; the small last one does.
    const a = agent({ knowledge: [big('a', 3000), big('b', 3000), big('c', 3000), big('d', 100)] });
    const plan = planKnowledge(a.knowledge, { agent_id: 'agent-1' });
    expect(plan.inPrompt.map((k) => k.id)).toEqual(['a', 'b', 'd']);
    expect(plan.searchIds).toEqual(['c']);
    const cfg = build({}, a);
    const knowledge = cfg.system_prompt.slice(cfg.system_prompt.indexOf('## Knowledge'));
    expect(Math.ceil(knowledge.length / 4)).toBeLessThanOrEqual(KNOWLEDGE_PROMPT_TOKEN_BUDGET + 30);
    expect(knowledge).not.toContain('### c');
    expect(knowledge).toContain('search_knowledge');
    expect(cfg.knowledge_search?.item_ids).toEqual(['c']);
  });

  it('no on_demand bases and everything fits: no search function', () => {
    expect(build({}, agent({ knowledge: [{ id: 'k', title: 'Hours', content: 'Open.', mode: 'always' }] })).knowledge_search).toBeUndefined();
  });

  it('at most 100 knowledge_base_ids', () => {
    expect(errorOf(() => build({ knowledge_base_ids: Array.from({ length: 101 }, (_, i) => `k${i}`) })).details?.[0]?.field).toBe('knowledge_base_ids');
  });
});

describe('flow mode', () => {
  const flow = {
    start_node_id: 's',
    nodes: [
      { id: 's', type: 'start' as const, label: 'Greet', instructions: 'Greet {{customer}}.' },
      { id: 'x', type: 'end' as const, label: 'End', instructions: '' },
    ],
    edges: [{ from: 's', to: 'x', description: 'done' }],
    variables: [],
  };
  it('carries the flow (instructions unsubstituted: variables are filled when a node is entered)', () => {
    const cfg = build({ dynamic_variables: { customer: 'Kim' } }, agent({ flow }));
    expect(cfg.flow).toEqual(flow);
    expect(cfg.flow).not.toBe(flow);
  });
  it('a flow that cannot run is CONFLICT naming the flow', () => {
    const e = errorOf(() => build({}, agent({ flowProblem: 'the published flow cannot run: x' })));
    expect(e.code).toBe('CONFLICT');
    expect(e.details?.[0]?.field).toBe('flow');
  });

  it('an always-on base named in knowledge_base_ids appears once; empty knowledge is skipped', () => {
    const a = agent({ knowledge: [{ id: 'kb-always', title: '', content: 'Fact.', mode: 'always' }, { id: 'e', title: 'Empty', content: '  ', mode: 'always' }] });
    expect(build({ knowledge_base_ids: ['kb-always'] }, a).system_prompt).toBe('You are Ava, helping .\n\n## Knowledge\nFact.');
  });
});

describe('invalid values', () => {
  it.each<[Partial<StartRequest> & Record<string, unknown>, string]>([
    [{ agent_id: '' }, 'agent_id'],
    [{ agent_id: '  ' }, 'agent_id'],
    [{ welcome_mode: 'loud' }, 'welcome_mode'],
    [{ kb_mode: 'vector' }, 'kb_mode'],
    [{ call_direction: 'sideways' }, 'call_direction'],
    [{ max_turns: 0 }, 'max_turns'],
    [{ max_turns: -3 }, 'max_turns'],
    [{ max_turns: 2.5 }, 'max_turns'],
    [{ dynamic_variables: ['a'] as never }, 'dynamic_variables'],
    [{ session_metadata: 'x' as never }, 'session_metadata'],
    [{ knowledge_base_ids: [1] as never }, 'knowledge_base_ids'],
    [{ language: 5 as never }, 'language'],
  ])('%j -> 400 naming %s', (req, field) => {
    const err = errorOf(() => buildSessionConfig(agent(), { agent_id: 'agent-1', ...req } as StartRequest, IDS));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.status).toBe(400);
    expect(err.details).toEqual([expect.objectContaining({ field })]);
  });

  it('a workspace_id other than the agent\'s is NOT_FOUND, like an unknown agent', () => {
    const err = errorOf(() => build({ workspace_id: 'ws-other' }));
    expect(err.code).toBe('NOT_FOUND');
  });

  it('an agent never published is CONFLICT', () => {
    expect(errorOf(() => build({}, agent({ versionNumber: 0 }))).code).toBe('CONFLICT');
  });

  it('missing providers are MISSING_PROVIDER naming each kind', () => {
    const err = errorOf(() => build({}, agent({ providers: { llm: { provider_name: 'openai' } } })));
    expect(err.code).toBe('MISSING_PROVIDER');
    expect(err.status).toBe(400);
    expect(err.details).toEqual([
      { field: 'providers.asr', problem: 'missing' },
      { field: 'providers.tts', problem: 'missing' },
    ]);
    const emptyName = errorOf(() => build({}, agent({ providers: { ...agent().providers, llm: { provider_name: '' } } })));
    expect(emptyName.details).toEqual([{ field: 'providers.llm', problem: 'missing' }]);
  });

  it('a TTS override does not stand in for a missing TTS provider', () => {
    const { tts: _tts, ...rest } = agent().providers;
    expect(errorOf(() => build({ tts_provider: 'sim' }, agent({ providers: rest }))).code).toBe('MISSING_PROVIDER');
  });
});
