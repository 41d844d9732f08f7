/**
 * Draft rows -> immutable version snapshot, and snapshot -> live configuration. Pure (the secret
 * box only decrypts). The snapshot keeps secrets encrypted; only `liveFromSnapshot` decrypts them,
 * for internal callers.
 */
import type { SecretBox } from '../../../shared/secrets.js';
import { validateFlow } from '../flow/validate.js';
import {
  PROVIDER_TYPES,
  SNAPSHOT_FORMAT,
  type AgentFields,
  type AgentSnapshot,
  type FlowGraphJson,
  type FlowVariableJson,
  type KbMode,
  type LiveAgentConfig,
  type LiveKnowledgeItem,
  type LiveProvider,
  type ProviderType,
  type SnapshotProvider,
  type SnapshotTelephony,
  type SnapshotTool,
} from '../types.js';

/** What one `select ... json_agg(...)` statement returns for an agent's draft (json rows). */
export interface RawDraft {
  agent: Record<string, unknown> & { id: string; workspace_id: string; user_id: string };
  providers: Array<Record<string, unknown>>;
  tools: Array<Record<string, unknown>>;
  kbs: Array<Record<string, unknown>>;
  flow: (Record<string, unknown> & { graph: FlowGraphJson; variables: FlowVariableJson[] }) | null;
  telephony: Record<string, unknown> | null;
}

const AGENT_KEYS: Array<keyof AgentFields> = [
  'name', 'description', 'system_prompt', 'welcome_message', 'language', 'max_turns', 'connection_type',
  'interrupt_enabled', 'vad_threshold', 'silence_timeout_ms', 'is_active', 'allow_human_transfer', 'mode',
  'metadata', 'connectors',
];
const TOOL_KEYS: Array<keyof SnapshotTool> = [
  'id', 'agent_id', 'name', 'description', 'function_schema', 'endpoint_url', 'http_method', 'headers', 'auth_type',
  'auth_token_enc', 'request_body', 'response_path', 'timeout_ms', 'retry_count', 'is_active', 'connector_binding',
];
const TELEPHONY_KEYS: Array<keyof SnapshotTelephony> = [
  'agent_id', 'carrier_phone_number', 'carrier_account_sid', 'carrier_auth_token_enc', 'call_direction', 'webhook_url',
  'human_transfer_number', 'human_transfer_mode', 'panel_project_id', 'transcribe_human_segment', 'generate_call_summary',
];

function pick<T>(row: Record<string, unknown>, keys: Array<keyof T>): T {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k as string] = row[k as string];
  return out as T;
}

/**
 * The complete draft as a snapshot. `fallbacks` are provider types the agent lacks, resolved from
 * the owner's own configurations at publish time (never from the registry default: `sim` is never
 * a silent fallback).
 */
export function buildSnapshot(raw: RawDraft, fallbacks: SnapshotProvider[] = []): AgentSnapshot {
  const own: SnapshotProvider[] = raw.providers.map((p) => ({
    provider_type: p.provider_type as ProviderType,
    provider_name: String(p.provider_name),
    api_key_enc: (p.api_key_enc as string | null) ?? null,
    model_name: String(p.model_name ?? ''),
    base_url: String(p.base_url ?? ''),
    source: 'agent',
  }));
  const providers = [...own, ...fallbacks.filter((f) => !own.some((o) => o.provider_type === f.provider_type))];
  const flow = raw.flow
    ? (() => {
        const errors = validateFlow(raw.flow.graph);
        return {
          id: String(raw.flow.id),
          version: Number(raw.flow.version),
          graph: raw.flow.graph,
          variables: raw.flow.variables,
          is_valid: errors.length === 0,
          validation_errors: errors,
        };
      })()
    : null;
  return {
    format: SNAPSHOT_FORMAT,
    agent_id: raw.agent.id,
    workspace_id: raw.agent.workspace_id,
    user_id: raw.agent.user_id,
    agent: pick<AgentFields>(raw.agent, AGENT_KEYS),
    providers,
    tools: raw.tools.map((t) => pick<SnapshotTool>(t, TOOL_KEYS)),
    knowledge_bases: raw.kbs.map((k) => ({
      id: String(k.id),
      knowledge_base_id: String(k.knowledge_base_id),
      mode: k.mode as KbMode,
      is_active: Boolean(k.is_active),
    })),
    flow,
    telephony: raw.telephony ? pick<SnapshotTelephony>(raw.telephony, TELEPHONY_KEYS) : null,
  };
}

export interface MemoryItemRow {
  id: string;
  title: string;
  content: string;
  content_type: string;
}

/**
 * Snapshot -> live configuration with secrets decrypted. `memory` holds the bound memory items
 * that still exist and are active (read at call time: knowledge contents are workspace data, not
 * part of the agent's draft).
 */
export function liveFromSnapshot(
  s: AgentSnapshot,
  meta: { version_number: number; published_at: string },
  secrets: SecretBox,
  memory: MemoryItemRow[],
): LiveAgentConfig {
  const dec = (enc: string | null | undefined) => (enc ? secrets.decrypt(enc) : '');
  const providers = Object.fromEntries(PROVIDER_TYPES.map((t) => [t, null])) as Record<ProviderType, LiveProvider | null>;
  for (const p of s.providers) {
    providers[p.provider_type] = {
      provider_type: p.provider_type,
      provider_name: p.provider_name,
      api_key: dec(p.api_key_enc),
      model_name: p.model_name,
      base_url: p.base_url,
      source: p.source,
    };
  }
  const byId = new Map(memory.map((m) => [m.id, m]));
  const activeKbs = s.knowledge_bases.filter((k) => k.is_active && byId.has(k.knowledge_base_id));
  const contents = (mode: KbMode): LiveKnowledgeItem[] =>
    activeKbs
      .filter((k) => k.mode === mode)
      .map((k) => {
        const m = byId.get(k.knowledge_base_id)!;
        return { knowledge_base_id: m.id, title: m.title, content: m.content, content_type: m.content_type };
      });
  const always = contents('always');
  const onDemand = contents('on_demand');
  const { carrier_auth_token_enc, agent_id: _agentId, ...tel } = s.telephony ?? ({} as SnapshotTelephony);
  return {
    agent_id: s.agent_id,
    workspace_id: s.workspace_id,
    user_id: s.user_id,
    version_number: meta.version_number,
    published_at: meta.published_at,
    ...s.agent,
    providers,
    tools: s.tools
      .filter((t) => t.is_active)
      .map((t) => ({
        id: t.id,
        name: t.name,
        description: t.description,
        function_schema: t.function_schema,
        endpoint_url: t.endpoint_url,
        http_method: t.http_method,
        headers: t.headers,
        auth_type: t.auth_type,
        auth_token: dec(t.auth_token_enc),
        request_body: t.request_body,
        response_path: t.response_path,
        timeout_ms: t.timeout_ms,
        retry_count: t.retry_count,
        connector_binding: t.connector_binding,
      })),
    knowledge: {
      always,
      on_demand_ids: onDemand.map((k) => k.knowledge_base_id),
      on_demand: onDemand,
    },
    flow: s.flow,
    telephony: s.telephony ? { ...tel, carrier_auth_token: dec(carrier_auth_token_enc) } : null,
  };
}

/** Memory item ids the live config needs to read. */
export function boundMemoryIds(s: AgentSnapshot): string[] {
  return s.knowledge_bases.filter((k) => k.is_active).map((k) => k.knowledge_base_id);
}
