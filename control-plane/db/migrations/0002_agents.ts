/**
 * Agents (draft configuration + immutable published versions) and the provider registry.
 * Draft tables hold what the API edits; `agent_versions.snapshot` is the complete draft frozen at
 * publish time (secrets still encrypted). `agents.live_version` names the version calls use.
 */

/** Registry rows seeded once. `sim` (the offline family) is the registry default of every type. */
const SEED: Array<{
  name: string;
  type: 'llm' | 'asr' | 'tts';
  description: string;
  baseUrl: string;
  authType: string;
  defaultConfig: Record<string, unknown>;
  models: string[];
  languages: string[];
}> = [
  { name: 'sim', type: 'llm', description: 'Offline scripted LLM (no network)', baseUrl: '', authType: 'none', defaultConfig: { is_default: true, default_model: 'sim-llm' }, models: ['sim-llm'], languages: ['*'] },
  { name: 'sim', type: 'asr', description: 'Offline tone-code speech recognizer (no network)', baseUrl: '', authType: 'none', defaultConfig: { is_default: true, default_model: 'sim-asr' }, models: ['sim-asr'], languages: ['*'] },
  { name: 'sim', type: 'tts', description: 'Offline tone-code speech synthesizer (no network)', baseUrl: '', authType: 'none', defaultConfig: { is_default: true, default_model: 'sim-tts' }, models: ['sim-tts'], languages: ['*'] },
  { name: 'deepgram', type: 'asr', description: 'Deepgram streaming speech-to-text', baseUrl: 'https://api.deepgram.com', authType: 'api_key', defaultConfig: { default_model: 'nova-3' }, models: ['nova-3', 'nova-2'], languages: ['en', 'es', 'fr', 'de', 'pt', 'it', 'nl', 'hi', 'ja'] },
  { name: 'deepgram', type: 'tts', description: 'Deepgram Aura text-to-speech', baseUrl: 'https://api.deepgram.com', authType: 'api_key', defaultConfig: { default_model: 'aura-2-thalia-en' }, models: ['aura-2-thalia-en', 'aura-asteria-en'], languages: ['en'] },
  { name: 'openai', type: 'llm', description: 'OpenAI Chat Completions', baseUrl: 'https://api.openai.com/v1', authType: 'bearer', defaultConfig: { default_model: 'gpt-4o-mini' }, models: ['gpt-4o-mini', 'gpt-4o', 'gpt-4.1-mini'], languages: ['*'] },
  { name: 'openai', type: 'asr', description: 'OpenAI transcription', baseUrl: 'https://api.openai.com/v1', authType: 'bearer', defaultConfig: { default_model: 'gpt-4o-mini-transcribe' }, models: ['gpt-4o-mini-transcribe', 'whisper-1'], languages: ['*'] },
  { name: 'openai', type: 'tts', description: 'OpenAI speech', baseUrl: 'https://api.openai.com/v1', authType: 'bearer', defaultConfig: { default_model: 'gpt-4o-mini-tts' }, models: ['gpt-4o-mini-tts', 'tts-1'], languages: ['*'] },
  { name: 'anthropic', type: 'llm', description: 'Anthropic Messages API', baseUrl: 'https://api.anthropic.com', authType: 'api_key', defaultConfig: { default_model: 'claude-3-5-haiku-latest' }, models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-0'], languages: ['*'] },
  { name: 'elevenlabs', type: 'tts', description: 'ElevenLabs streaming text-to-speech', baseUrl: 'https://api.elevenlabs.io', authType: 'api_key', defaultConfig: { default_model: 'eleven_flash_v2_5' }, models: ['eleven_flash_v2_5', 'eleven_turbo_v2_5', 'eleven_multilingual_v2'], languages: ['*'] },
  { name: 'cartesia', type: 'tts', description: 'Cartesia Sonic text-to-speech', baseUrl: 'https://api.cartesia.ai', authType: 'api_key', defaultConfig: { default_model: 'sonic-2' }, models: ['sonic-2'], languages: ['en', 'es', 'fr', 'de', 'pt', 'ja', 'zh', 'hi'] },
];

const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
const arr = (xs: string[]) => `array[${xs.map(lit).join(',')}]::text[]`;

// Idempotent: the unique (lower(name), provider_type) index makes a re-run a no-op.
const seedSql = SEED.map(
  (p, i) => `insert into provider_definitions (id, name, provider_type, description, base_url, auth_type, is_active, default_config, supported_models, supported_languages, created_at, updated_at)
values (gen_random_uuid(), ${lit(p.name)}, ${lit(p.type)}, ${lit(p.description)}, ${lit(p.baseUrl)}, ${lit(p.authType)}, true, ${lit(JSON.stringify(p.defaultConfig))}::jsonb, ${arr(p.models)}, ${arr(p.languages)}, now() + interval '${i} milliseconds', now() + interval '${i} milliseconds')
on conflict do nothing;`,
).join('\n');

export const m0002_agents = {
  version: 2,
  name: 'agents',
  sql: /* sql */ `
create table agents (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  user_id uuid not null references users(id) on delete cascade,
  name text not null,
  description text not null default '',
  system_prompt text not null default '',
  welcome_message text not null default '',
  language text not null default 'en',
  max_turns integer not null default 50,
  connection_type text not null default 'voice',
  interrupt_enabled boolean not null default true,
  vad_threshold double precision not null default 0.5,
  silence_timeout_ms integer not null default 8000,
  is_active boolean not null default true,
  allow_human_transfer boolean not null default false,
  mode text not null default 'single_prompt' check (mode in ('single_prompt', 'flow')),
  metadata jsonb not null default '{}',
  connectors text[] not null default '{}',
  -- the version calls use (null: never published) and its phone number, denormalised so inbound
  -- lookups by number need no jsonb scan
  live_version integer,
  live_phone_number text,
  live_since timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agents_ws_idx on agents (workspace_id, created_at desc, id desc);
create index agents_live_phone_idx on agents (live_phone_number) where live_phone_number is not null;

create table agent_providers (
  id uuid primary key,
  agent_id uuid not null references agents(id) on delete cascade,
  provider_type text not null check (provider_type in ('llm', 'tts', 'asr')),
  provider_name text not null,
  api_key_enc text,
  model_name text not null default '',
  base_url text not null default '',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (agent_id, provider_type)
);

create table agent_tools (
  id uuid primary key,
  agent_id uuid not null references agents(id) on delete cascade,
  name text not null,
  description text not null default '',
  function_schema jsonb not null default '{}',
  endpoint_url text not null default '',
  http_method text not null default 'POST',
  headers jsonb not null default '{}',
  auth_type text not null default 'none',
  auth_token_enc text,
  request_body jsonb,
  response_path text not null default '',
  timeout_ms integer not null default 10000,
  retry_count integer not null default 0,
  is_active boolean not null default true,
  connector_binding jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index agent_tools_name_key on agent_tools (agent_id, name);

create table agent_knowledge_bases (
  id uuid primary key,
  agent_id uuid not null references agents(id) on delete cascade,
  knowledge_base_id uuid not null references memory_items(id) on delete cascade,
  mode text not null check (mode in ('always', 'on_demand')),
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (agent_id, knowledge_base_id)
);

create table agent_flows (
  agent_id uuid primary key references agents(id) on delete cascade,
  id uuid not null,
  version integer not null default 1,
  graph jsonb not null,
  variables jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table agent_telephony (
  agent_id uuid primary key references agents(id) on delete cascade,
  carrier_phone_number text,
  carrier_account_sid text not null default '',
  carrier_auth_token_enc text,
  call_direction text not null default 'both' check (call_direction in ('inbound', 'outbound', 'both')),
  webhook_url text not null default '',
  human_transfer_number text not null default '',
  human_transfer_mode text not null default 'phone' check (human_transfer_mode in ('phone', 'panel')),
  panel_project_id text not null default '',
  transcribe_human_segment boolean not null default false,
  generate_call_summary boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- a number is bound to at most one agent platform-wide (draft bindings; PHONE_NUMBER_TAKEN)
create unique index agent_telephony_phone_key on agent_telephony (carrier_phone_number) where carrier_phone_number is not null;

create table agent_versions (
  agent_id uuid not null references agents(id) on delete cascade,
  version_number integer not null,
  snapshot jsonb not null,
  published_by uuid,
  published_at timestamptz not null default now(),
  primary key (agent_id, version_number)
);

create table provider_definitions (
  id uuid primary key,
  name text not null,
  provider_type text not null check (provider_type in ('llm', 'tts', 'asr')),
  description text not null default '',
  base_url text not null default '',
  auth_type text not null default 'api_key',
  is_active boolean not null default true,
  default_config jsonb not null default '{}',
  supported_models text[] not null default '{}',
  supported_languages text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index provider_definitions_name_key on provider_definitions (lower(name), provider_type);

create table user_provider_configs (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  -- null: user-level; else this agent only
  agent_id uuid references agents(id) on delete cascade,
  provider_id uuid not null references provider_definitions(id) on delete cascade,
  provider_type text not null check (provider_type in ('llm', 'tts', 'asr')),
  api_key_enc text,
  model_name text not null default '',
  config jsonb not null default '{}',
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index user_provider_configs_key on user_provider_configs
  (user_id, provider_id, coalesce(agent_id, '00000000-0000-0000-0000-000000000000'::uuid));
create unique index user_provider_configs_default_key on user_provider_configs (user_id, provider_type)
  where is_default and agent_id is null;

${seedSql}
`,
};
