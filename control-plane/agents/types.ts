/**
 * Key types of the agents domain: database rows of the draft tables, the immutable version
 * snapshot (stored as jsonb, secrets still encrypted) and the live configuration handed to calls
 * (secrets decrypted; internal use only, never a response body).
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';

export const PROVIDER_TYPES = ['llm', 'tts', 'asr'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

export const AGENT_MODES = ['single_prompt', 'flow'] as const;
export type AgentMode = (typeof AGENT_MODES)[number];

export const KB_MODES = ['always', 'on_demand'] as const;
export type KbMode = (typeof KB_MODES)[number];

/** Agent fields that are configuration (everything but ids, owner and timestamps). */
export interface AgentFields {
  name: string;
  description: string;
  system_prompt: string;
  welcome_message: string;
  language: string;
  max_turns: number;
  connection_type: string;
  interrupt_enabled: boolean;
  vad_threshold: number;
  silence_timeout_ms: number;
  is_active: boolean;
  allow_human_transfer: boolean;
  mode: AgentMode;
  metadata: JsonObject;
  connectors: string[];
}

export interface AgentRow extends AgentFields {
  id: string;
  workspace_id: string;
  user_id: string;
  live_version: number | null;
  created_at: Date;
  updated_at: Date;
}

export interface AgentProviderRow {
  id: string;
  agent_id: string;
  provider_type: ProviderType;
  provider_name: string;
  api_key_enc: string | null;
  model_name: string;
  base_url: string;
  created_at: Date;
  updated_at: Date;
}

export interface ConnectorActionJson {
  name: string;
  description: string;
  parameters: JsonObject;
  fixed: JsonObject;
  fixed_labels?: JsonObject;
}

export interface ConnectorBindingJson {
  connection_id: string;
  actions: ConnectorActionJson[];
}

/**
 * A tool's definition as stored and as a live call runs it: the fields `ToolRow` (the table) and
 * `LiveTool` (what a call gets, token decrypted) share, declared once so the two cannot drift.
 */
export interface ToolDefinition {
  id: string;
  name: string;
  description: string;
  function_schema: JsonObject;
  endpoint_url: string;
  http_method: string;
  headers: Record<string, string>;
  auth_type: string;
  request_body: JsonValue | null;
  response_path: string;
  timeout_ms: number;
  retry_count: number;
  connector_binding: ConnectorBindingJson | null;
}

export interface ToolRow extends ToolDefinition {
  agent_id: string;
  auth_token_enc: string | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface KbBindingRow {
  id: string;
  agent_id: string;
  knowledge_base_id: string;
  mode: KbMode;
  is_active: boolean;
  title: string;
  created_at: Date;
  updated_at: Date;
}

export interface FlowNodeJson {
  id: string;
  type: string;
  label: string;
  config?: JsonObject;
}

export interface FlowEdgeJson {
  from: string;
  to: string;
  condition?: string;
}

export interface FlowGraphJson {
  nodes: FlowNodeJson[];
  edges: FlowEdgeJson[];
  start_node_id: string;
}

export interface FlowVariableJson {
  name: string;
  type: string;
}

export interface FlowValidationErrorJson {
  code: string;
  message: string;
  node_ids: string[];
}

export interface FlowRow {
  agent_id: string;
  id: string;
  version: number;
  graph: FlowGraphJson;
  variables: FlowVariableJson[];
  created_at: Date;
  updated_at: Date;
}

export interface TelephonyRow {
  agent_id: string;
  carrier_phone_number: string | null;
  carrier_account_sid: string;
  carrier_auth_token_enc: string | null;
  call_direction: 'inbound' | 'outbound' | 'both';
  webhook_url: string;
  human_transfer_number: string;
  human_transfer_mode: 'phone' | 'panel';
  panel_project_id: string;
  transcribe_human_segment: boolean;
  generate_call_summary: boolean;
  created_at: Date;
  updated_at: Date;
}

// ---------------------------------------------------------------------------------------------
// Version snapshot (agent_versions.snapshot). Bump SNAPSHOT_FORMAT when the shape changes and keep
// reading older formats: published versions are immutable.

export const SNAPSHOT_FORMAT = 1;

/** Where a snapshot provider came from at publish time. */
export type ProviderSource = 'agent' | 'user_config' | 'user_default';

export interface SnapshotProvider {
  provider_type: ProviderType;
  provider_name: string;
  api_key_enc: string | null;
  model_name: string;
  base_url: string;
  source: ProviderSource;
}

export type SnapshotTool = Omit<ToolRow, 'created_at' | 'updated_at'>;

export interface SnapshotFlow {
  id: string;
  version: number;
  graph: FlowGraphJson;
  variables: FlowVariableJson[];
  is_valid: boolean;
  validation_errors: FlowValidationErrorJson[];
}

export type SnapshotTelephony = Omit<TelephonyRow, 'created_at' | 'updated_at'>;

export interface AgentSnapshot {
  format: typeof SNAPSHOT_FORMAT;
  agent_id: string;
  workspace_id: string;
  user_id: string;
  agent: AgentFields;
  providers: SnapshotProvider[];
  tools: SnapshotTool[];
  knowledge_bases: Array<{ id: string; knowledge_base_id: string; mode: KbMode; is_active: boolean }>;
  flow: SnapshotFlow | null;
  telephony: SnapshotTelephony | null;
}

// ---------------------------------------------------------------------------------------------
// Live configuration: what voice sessions, calls and campaigns use. Secrets are DECRYPTED here;
// never put this object (or parts of it) in a response body or a log line.

export interface LiveProvider {
  provider_type: ProviderType;
  provider_name: string;
  /** Decrypted; "" when none is stored. */
  api_key: string;
  model_name: string;
  base_url: string;
  /** `agent`: the agent's own provider; `user_config` / `user_default`: the owner's configuration. */
  source: ProviderSource;
}

export interface LiveTool extends ToolDefinition {
  /** Decrypted; "" when none is stored. */
  auth_token: string;
}

export interface LiveKnowledgeItem {
  knowledge_base_id: string;
  title: string;
  content: string;
  content_type: string;
}

export interface LiveTelephony extends Omit<SnapshotTelephony, 'carrier_auth_token_enc' | 'agent_id'> {
  /** Decrypted; "" inherits the workspace account. */
  carrier_auth_token: string;
}

/** Agent fields as published; `metadata` carries the answering-machine keys (`amd_enabled`, ...) unparsed. */
export interface LiveAgentConfig extends AgentFields {
  agent_id: string;
  workspace_id: string;
  /** The agent's creator (owner of its user-level provider configurations). */
  user_id: string;
  version_number: number;
  /** RFC 3339: when this version was published. */
  published_at: string;
  /** null when the published version has no provider of that type (callers raise their own error). */
  providers: Record<ProviderType, LiveProvider | null>;
  /** Active tools only. */
  tools: LiveTool[];
  knowledge: {
    /** Contents of active `always` bindings whose memory item still exists and is active (read now). */
    always: LiveKnowledgeItem[];
    /** Memory item ids of active `on_demand` bindings (existing and active). */
    on_demand_ids: string[];
    /** The same `on_demand` items with their contents (a session may fold them in: `knowledge_base_ids`). */
    on_demand?: LiveKnowledgeItem[];
  };
  /** Present when one was stored at publish time (whatever the mode). */
  flow: SnapshotFlow | null;
  telephony: LiveTelephony | null;
}
