/**
 * A minimal published agent, as the agents domain's `liveConfig` hands it to the voice domain: `sim`
 * providers unless told otherwise, no tools, flow or telephony. For suites that route sessions
 * without the agents domain (a literal input, not a database row).
 */
import type { LiveAgentConfig } from '../../control-plane/voice/index.js';

export function liveProvider(kind: 'asr' | 'llm' | 'tts', name: string, apiKey = ''): NonNullable<LiveAgentConfig['providers']['asr']> {
  return { provider_type: kind, provider_name: name, api_key: apiKey, model_name: '', base_url: '', source: 'agent' } as NonNullable<LiveAgentConfig['providers']['asr']>;
}

export function simLiveAgent(id: string, llm = liveProvider('llm', 'sim')): LiveAgentConfig {
  return {
    agent_id: id,
    workspace_id: 'ws-1',
    user_id: 'u-1',
    version_number: 1,
    published_at: '2026-01-01T00:00:00.000Z',
    name: 'a',
    description: '',
    system_prompt: 'Be brief.',
    welcome_message: '',
    language: 'en',
    max_turns: 20,
    connection_type: 'voice',
    interrupt_enabled: true,
    vad_threshold: 0.5,
    silence_timeout_ms: 30_000,
    is_active: true,
    allow_human_transfer: false,
    mode: 'single_prompt',
    metadata: {},
    connectors: [],
    providers: { asr: liveProvider('asr', 'sim'), llm, tts: liveProvider('tts', 'sim') },
    tools: [],
    knowledge: { always: [], on_demand_ids: [] },
    flow: null,
    telephony: null,
  } as LiveAgentConfig;
}
