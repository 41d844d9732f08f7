import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildSnapshot, liveFromSnapshot, type RawDraft } from '../../../control-plane/agents/versions/snapshot.js';
import { SecretBox } from '../../../shared/secrets.js';

const box = new SecretBox(randomBytes(32));

function draft(): RawDraft {
  return {
    agent: {
      id: 'a1', workspace_id: 'w1', user_id: 'u1', name: 'A', description: '', system_prompt: 'P', welcome_message: 'W', language: 'en',
      max_turns: 50, connection_type: 'voice', interrupt_enabled: true, vad_threshold: 0.5, silence_timeout_ms: 8000, is_active: true,
      allow_human_transfer: false, mode: 'single_prompt', metadata: { amd_enabled: true }, connectors: [], live_version: null,
      live_phone_number: null, created_at: '2026-01-01T00:00:00+00:00', updated_at: '2026-01-01T00:00:00+00:00',
    },
    providers: [{ provider_type: 'llm', provider_name: 'openai', api_key_enc: box.encrypt('llm-key'), model_name: 'm', base_url: '', created_at: 'x' }],
    tools: [
      { id: 't1', agent_id: 'a1', name: 'on', description: '', function_schema: {}, endpoint_url: 'https://x', http_method: 'POST', headers: {}, auth_type: 'bearer', auth_token_enc: box.encrypt('tok'), request_body: null, response_path: '', timeout_ms: 10000, retry_count: 0, is_active: true, connector_binding: null, created_at: 'x' },
      { id: 't2', agent_id: 'a1', name: 'off', description: '', function_schema: {}, endpoint_url: 'https://x', http_method: 'POST', headers: {}, auth_type: 'none', auth_token_enc: null, request_body: null, response_path: '', timeout_ms: 10000, retry_count: 0, is_active: false, connector_binding: null, created_at: 'x' },
    ],
    kbs: [
      { id: 'b1', knowledge_base_id: 'm1', mode: 'always', is_active: true },
      { id: 'b2', knowledge_base_id: 'm2', mode: 'on_demand', is_active: true },
      { id: 'b3', knowledge_base_id: 'm3', mode: 'always', is_active: false },
      { id: 'b4', knowledge_base_id: 'gone', mode: 'always', is_active: true },
    ],
    flow: null,
    telephony: { agent_id: 'a1', carrier_phone_number: '+14155552671', carrier_account_sid: 'AC', carrier_auth_token_enc: box.encrypt('carrier'), call_direction: 'both', webhook_url: '', human_transfer_number: '', human_transfer_mode: 'phone', panel_project_id: '', transcribe_human_segment: false, generate_call_summary: false, created_at: 'x' },
  };
}

describe('buildSnapshot', () => {
  it('keeps configuration only (no timestamps, no live pointers) and secrets encrypted', () => {
    const s = buildSnapshot(draft());
    expect(s.agent).not.toHaveProperty('live_version');
    expect(s.agent).not.toHaveProperty('created_at');
    expect(s.tools[0]).not.toHaveProperty('created_at');
    expect(JSON.stringify(s)).not.toContain('llm-key');
    expect(JSON.stringify(s)).not.toContain('"carrier"');
    expect(s.providers).toEqual([expect.objectContaining({ provider_type: 'llm', source: 'agent' })]);
  });
  it('owner fallbacks fill only the missing types', () => {
    const s = buildSnapshot(draft(), [
      { provider_type: 'llm', provider_name: 'other', api_key_enc: null, model_name: '', base_url: '', source: 'user_default' },
      { provider_type: 'tts', provider_name: 'elevenlabs', api_key_enc: null, model_name: '', base_url: '', source: 'user_default' },
    ]);
    expect(s.providers.map((p) => [p.provider_type, p.provider_name])).toEqual([
      ['llm', 'openai'],
      ['tts', 'elevenlabs'],
    ]);
  });
  it('computes the validity of a stored flow', () => {
    const d = draft();
    d.flow = { id: 'f', version: 3, graph: { nodes: [{ id: 's', type: 'start', label: '' }], edges: [], start_node_id: 's' }, variables: [] };
    expect(buildSnapshot(d).flow).toMatchObject({ version: 3, is_valid: true, validation_errors: [] });
  });
});

describe('liveFromSnapshot', () => {
  const s = buildSnapshot(draft());
  const memory = [
    { id: 'm1', title: 'Hours', content: '9-5', content_type: 'text/plain' },
    { id: 'm2', title: 'Catalog', content: '...', content_type: 'text/plain' },
    { id: 'm3', title: 'Inactive binding', content: '...', content_type: 'text/plain' },
  ];
  const live = liveFromSnapshot(s, { version_number: 4, published_at: '2026-01-01T00:00:00.000Z' }, box, memory);

  it('decrypts secrets', () => {
    expect(live.providers.llm?.api_key).toBe('llm-key');
    expect(live.tools[0].auth_token).toBe('tok');
    expect(live.telephony?.carrier_auth_token).toBe('carrier');
    expect(live.telephony).not.toHaveProperty('carrier_auth_token_enc');
  });
  it('fills every provider type (null when missing) and keeps active tools only', () => {
    expect(live.providers.asr).toBeNull();
    expect(live.providers.tts).toBeNull();
    expect(live.tools.map((t) => t.name)).toEqual(['on']);
  });
  it('knowledge: contents of active bindings whose item still exists, by mode; on-demand ids', () => {
    expect(live.knowledge).toEqual({
      always: [{ knowledge_base_id: 'm1', title: 'Hours', content: '9-5', content_type: 'text/plain' }],
      on_demand_ids: ['m2'],
      on_demand: [{ knowledge_base_id: 'm2', title: 'Catalog', content: '...', content_type: 'text/plain' }],
    });
  });
  it('carries the version and the agent fields', () => {
    expect(live).toMatchObject({ agent_id: 'a1', workspace_id: 'w1', user_id: 'u1', version_number: 4, system_prompt: 'P', metadata: { amd_enabled: true } });
  });
});
