import { newSecretId } from '../../shared/ids.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';

/** A complete SessionConfig with sim providers; tests override what they exercise. */
export function sessionConfig(overrides: Partial<SessionConfig> = {}): SessionConfig {
  return {
    session_id: newSecretId(),
    agent_id: '00000000-0000-7000-8000-000000000001',
    workspace_id: '00000000-0000-7000-8000-000000000002',
    agent_version: 1,
    system_prompt: 'You are a helpful test agent.',
    welcome_message: '',
    welcome_mode: 'auto',
    language: 'en',
    max_turns: 50,
    interrupt_enabled: true,
    vad_threshold: 0.5,
    silence_timeout_ms: 8000,
    idle_max_attempts: 2,
    providers: { asr: { provider_name: 'sim' }, llm: { provider_name: 'sim' }, tts: { provider_name: 'sim' } },
    tools: [],
    agent_metadata: {},
    session_metadata: {},
    dynamic_variables: {},
    call_direction: 'inbound',
    connection_type: 'voice',
    created_at_ms: Date.now(),
    ...overrides,
  };
}

/** The weather HTTP tool the end-to-end scenarios call against their local tool server. */
export function weatherTool(endpointUrl: string): SessionConfig['tools'][number] {
  return {
    id: 't1',
    name: 'get_weather',
    description: 'weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
    endpoint_url: endpointUrl,
    http_method: 'POST',
    headers: {},
    auth_type: 'bearer',
    auth_token: 'tool-secret-token',
    request_body: { city: '{{city}}' },
    response_path: 'forecast.summary',
    timeout_ms: 2000,
    retry_count: 0,
  };
}
