/**
 * Session start, control-plane side of connector tools: which bound tools reach the session
 * config (live connection only, actions of the connection's provider, unique function names),
 * pinned parameters hidden from the model, and the carrier numbers carried for `{{caller_number}}`.
 */
import { describe, expect, it } from 'vitest';
import { liveConnectorTools, toAgentLiveView, withoutPinned, type LiveAgentConfig } from '../../../control-plane/voice/agent-view.js';
import { buildSessionConfig } from '../../../control-plane/voice/build-config.js';
import type { LiveTool } from '../../../control-plane/agents/types.js';

const CAL = '0193a4c2-7b7e-7cc1-8f00-0000000000c1';
const HUB = '0193a4c2-7b7e-7cc1-8f00-0000000000c2';
const GONE = '0193a4c2-7b7e-7cc1-8f00-0000000000c3';

const BOOK_PARAMS = {
  type: 'object',
  properties: { event_type_id: { type: 'integer' }, start: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' }, phone: { type: 'string' } },
  required: ['event_type_id', 'start', 'name', 'email'],
  additionalProperties: false,
};

function tool(over: Partial<LiveTool>): LiveTool {
  return {
    id: 't',
    name: 't',
    description: '',
    function_schema: {},
    endpoint_url: '',
    http_method: 'POST',
    headers: {},
    auth_type: 'none',
    auth_token: '',
    request_body: null,
    response_path: '',
    timeout_ms: 0,
    retry_count: 0,
    connector_binding: null,
    ...over,
  };
}

const calTool = tool({
  id: 'tool-cal',
  name: 'calcom',
  timeout_ms: 4000,
  connector_binding: {
    connection_id: CAL,
    actions: [
      { name: 'calcom__book', description: 'Book a slot.', parameters: BOOK_PARAMS, fixed: { event_type_id: 77, phone: '{{caller_number}}' }, fixed_labels: { event_type_id: 'Consultation' } },
      { name: 'calcom__list_free_slots', description: 'Free slots.', parameters: { type: 'object', properties: { start: { type: 'string' } } }, fixed: {} },
      // A hand-written binding naming another provider's action: the connector would answer 404.
      { name: 'hubspot__find_contact', description: 'x', parameters: { type: 'object' }, fixed: {} },
    ],
  },
});

describe('liveConnectorTools', () => {
  it('keeps live connections only, their provider actions only, pinned parameters hidden, fixed values as stored', () => {
    const gone = tool({ id: 'tool-gone', connector_binding: { connection_id: GONE, actions: [{ name: 'stripe__create_payment_link', description: '', parameters: {}, fixed: {} }] } });
    const out = liveConnectorTools([calTool, gone], new Map([[CAL, 'calcom']]));
    expect(out).toEqual([
      {
        tool_id: 'tool-cal',
        connection_id: CAL,
        provider_id: 'calcom',
        timeout_ms: 4000,
        actions: [
          {
            name: 'calcom__book',
            description: 'Book a slot.',
            parameters: { type: 'object', properties: { start: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' } }, required: ['start', 'name', 'email'], additionalProperties: false },
            fixed: { event_type_id: 77, phone: '{{caller_number}}' },
          },
          { name: 'calcom__list_free_slots', description: 'Free slots.', parameters: { type: 'object', properties: { start: { type: 'string' } } }, fixed: {} },
        ],
      },
    ]);
  });

  it('function names stay unique: an HTTP tool or an earlier connector tool keeps the name', () => {
    const http = tool({ id: 'h', name: 'calcom__list_free_slots', endpoint_url: 'https://x.test/slots' });
    const again = tool({ id: 'tool-cal-2', connector_binding: { connection_id: CAL, actions: [{ name: 'calcom__book', description: 'dup', parameters: {}, fixed: {} }] } });
    const out = liveConnectorTools([http, calTool, again], new Map([[CAL, 'calcom']]));
    expect(out.map((t) => [t.tool_id, t.actions.map((a) => a.name)])).toEqual([['tool-cal', ['calcom__book']]]);
    // The default tool timeout when the tool sets none.
    expect(liveConnectorTools([tool({ connector_binding: { connection_id: HUB, actions: [{ name: 'hubspot__find_contact', description: '', parameters: {}, fixed: {} }] } })], new Map([[HUB, 'hubspot']]))[0]!.timeout_ms).toBe(10_000);
  });

  it('withoutPinned drops pinned keys from properties and required (an emptied required goes away)', () => {
    expect(withoutPinned({ type: 'object', properties: { a: {}, b: {} }, required: ['a'] }, ['a'])).toEqual({ type: 'object', properties: { b: {} } });
    expect(withoutPinned(undefined, ['a'])).toEqual({ type: 'object', properties: {} });
    const same = { type: 'object', properties: { a: {} } };
    expect(withoutPinned(same, [])).toEqual(same);
  });
});

describe('toAgentLiveView + buildSessionConfig with connector tools', () => {
  const live: LiveAgentConfig = {
    agent_id: 'a1',
    workspace_id: 'w1',
    user_id: 'u1',
    version_number: 2,
    published_at: '2026-01-01T00:00:00.000Z',
    name: 'Ava',
    description: '',
    system_prompt: 'Prompt',
    welcome_message: '',
    language: 'en',
    max_turns: 0,
    connection_type: 'twilio',
    interrupt_enabled: true,
    vad_threshold: 0.5,
    silence_timeout_ms: 8000,
    is_active: true,
    allow_human_transfer: false,
    mode: 'single_prompt',
    metadata: {},
    connectors: ['calcom'],
    providers: {
      asr: { provider_type: 'asr', provider_name: 'sim', api_key: '', model_name: '', base_url: '', source: 'agent' },
      llm: { provider_type: 'llm', provider_name: 'sim', api_key: '', model_name: '', base_url: '', source: 'agent' },
      tts: { provider_type: 'tts', provider_name: 'sim', api_key: '', model_name: '', base_url: '', source: 'agent' },
    },
    tools: [calTool],
    knowledge: { always: [], on_demand_ids: [] },
    flow: null,
    telephony: null,
  };

  it('a live connection: connector tools in the session config with the carrier numbers; none without it', () => {
    const cfg = buildSessionConfig(toAgentLiveView(live, new Map([[CAL, 'calcom']])), { agent_id: 'a1', call_id: 'c1', from_number: '+14155550199', to_number: '+14155550101' }, { sessionId: 's1', nowMs: 1 });
    expect(cfg.connector_tools?.map((t) => t.actions.map((a) => a.name))).toEqual([['calcom__book', 'calcom__list_free_slots']]);
    expect(cfg.tools).toEqual([]);
    expect(cfg).toMatchObject({ from_number: '+14155550199', to_number: '+14155550101' });
    // Nothing secret travels: the config names the connection, never a credential.
    expect(JSON.stringify(cfg.connector_tools)).not.toMatch(/api_key|secret|token/i);

    const disconnected = buildSessionConfig(toAgentLiveView(live), { agent_id: 'a1' }, { sessionId: 's2', nowMs: 1 });
    expect(disconnected.connector_tools).toEqual([]);
    expect(disconnected.from_number).toBeUndefined();
  });
});
