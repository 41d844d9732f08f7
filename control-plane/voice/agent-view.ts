/**
 * What session start needs from an agent, decoupled from the agents domain's own type. The agents
 * domain exposes `liveConfig(agentId)` (the PUBLISHED snapshot, secrets decrypted); only
 * `toAgentLiveView` below knows its shape, so a change there touches this one function.
 */
import { AppError } from '../../shared/errors.js';
import type { LiveAgentConfig, LiveTool } from '../agents/types.js';
import type { ConnectorActionConfig, ConnectorToolConfig, HttpToolConfig, ProviderSettings } from '../../shared/voice/session-config.js';
import type { FlowConfig } from '../../shared/voice/flow.js';
import { resolveFlow } from './flow-config.js';

export type { LiveAgentConfig };

/**
 * An agent whose published version has `is_active: false` takes no new calls (browser sessions,
 * outbound dials, campaign dials); inbound calls to its number are refused like an unused number.
 * Calls already connected run to their end. Like every agent field it changes with a publish.
 */
export function inactiveAgentError(agentId: string): AppError {
  return new AppError('CONFLICT', `agent ${agentId} is inactive (is_active false in its published version): set is_active true and publish to take calls`, {
    details: [{ field: 'agent_id', problem: 'the agent is inactive' }],
  });
}

export type ProviderKind = 'asr' | 'llm' | 'tts';

/** One knowledge base (workspace memory item) the agent carries, with its content. */
export interface KnowledgeItem {
  id: string;
  title: string;
  content: string;
  /** `always`: folded into every session's prompt (within the budget). `on_demand`: searched, or folded when a session names it. */
  mode: 'always' | 'on_demand';
}

/** The published agent as session start sees it. Every field is resolved (defaults applied). */
export interface AgentLiveView {
  agentId: string;
  workspaceId: string;
  userId?: string;
  /** Published version number; 0 or less means never published. */
  versionNumber: number;
  systemPrompt: string;
  welcomeMessage: string;
  language: string;
  /** Hard cap on turns; 0 means the agent sets none. */
  maxTurns: number;
  interruptEnabled: boolean;
  vadThreshold: number;
  silenceTimeoutMs: number;
  metadata: Record<string, unknown>;
  /** A missing kind is reported as MISSING_PROVIDER at session start. */
  providers: Partial<Record<ProviderKind, ProviderSettings>>;
  /** Active HTTP tools, auth tokens decrypted. */
  tools: HttpToolConfig[];
  /** Active connector tools whose connection is live now (see `liveConnectorTools`). */
  connectorTools: ConnectorToolConfig[];
  knowledge: KnowledgeItem[];
  /** `flow` mode with a runnable published flow; absent in `single_prompt` mode. */
  flow?: FlowConfig;
  /** `flow` mode whose published flow cannot run: why (session start answers 409). */
  flowProblem?: string;
  /** `allow_human_transfer` with `human_transfer_mode: panel`: carrier calls may be handed to a portal agent (issue 21). */
  humanHandoff?: true;
}

/** Defaults for agent fields the published snapshot leaves unset. */
export const AGENT_DEFAULTS = {
  language: 'en',
  /** 0..1, higher = less sensitive. */
  vadThreshold: 0.5,
  silenceTimeoutMs: 8000,
  /** Tool HTTP timeout when the tool sets none. */
  toolTimeoutMs: 10_000,
} as const;

/**
 * Which of the given connection ids are live (active, in the workspace) right now, with each
 * one's provider id. The connectors domain answers it; a published snapshot cannot know that a
 * connection was disconnected after publish.
 */
export type LiveConnections = (workspaceId: string, connectionIds: string[], signal?: AbortSignal) => Promise<ReadonlyMap<string, string>>;

/** The connection ids the live config's connector tools are bound to (what `LiveConnections` is asked). */
export function boundConnectionIds(c: LiveAgentConfig): string[] {
  return [...new Set((c.tools ?? []).flatMap((t) => (t.connector_binding ? [t.connector_binding.connection_id] : [])))];
}

/** `liveConnections`: connection id -> provider id of the live ones (default none: no connector tool reaches the call). */
export function toAgentLiveView(c: LiveAgentConfig, liveConnections: ReadonlyMap<string, string> = new Map()): AgentLiveView {
  const providers: AgentLiveView['providers'] = {};
  for (const kind of ['asr', 'llm', 'tts'] as const) {
    const p = c.providers?.[kind];
    if (p && p.provider_name) providers[kind] = dropEmpty({ provider_name: p.provider_name, api_key: p.api_key, model_name: p.model_name, base_url: p.base_url });
  }
  return {
    agentId: c.agent_id,
    workspaceId: c.workspace_id,
    userId: c.user_id || undefined,
    versionNumber: c.version_number ?? 0,
    systemPrompt: c.system_prompt ?? '',
    welcomeMessage: c.welcome_message ?? '',
    language: c.language || AGENT_DEFAULTS.language,
    maxTurns: c.max_turns && c.max_turns > 0 ? c.max_turns : 0,
    interruptEnabled: c.interrupt_enabled ?? true,
    vadThreshold: c.vad_threshold ?? AGENT_DEFAULTS.vadThreshold,
    silenceTimeoutMs: c.silence_timeout_ms && c.silence_timeout_ms > 0 ? c.silence_timeout_ms : AGENT_DEFAULTS.silenceTimeoutMs,
    metadata: { ...(c.metadata ?? {}) },
    providers,
    // Connector-bound tools have no endpoint: the engine runs them through the connector instead.
    tools: (c.tools ?? []).filter((t) => !t.connector_binding && t.endpoint_url).map(toHttpTool),
    connectorTools: liveConnectorTools(c.tools ?? [], liveConnections),
    knowledge: [
      ...(c.knowledge?.always ?? []).map((k) => ({ id: k.knowledge_base_id, title: k.title ?? '', content: k.content ?? '', mode: 'always' as const })),
      ...(c.knowledge?.on_demand ?? []).map((k) => ({ id: k.knowledge_base_id, title: k.title ?? '', content: k.content ?? '', mode: 'on_demand' as const })),
    ],
    ...flowOf(c),
    ...(c.allow_human_transfer && c.telephony?.human_transfer_mode === 'panel' ? { humanHandoff: true as const } : {}),
  };
}

function flowOf(c: LiveAgentConfig): Pick<AgentLiveView, 'flow' | 'flowProblem'> {
  if (c.mode !== 'flow') return {};
  const r = resolveFlow(c.flow);
  return 'flow' in r ? { flow: r.flow } : { flowProblem: r.problem };
}

function toHttpTool(t: LiveTool): HttpToolConfig {
  return dropUndefined({
    id: t.id,
    name: t.name,
    description: t.description ?? '',
    parameters: (t.function_schema as Record<string, unknown> | undefined) ?? { type: 'object', properties: {} },
    endpoint_url: t.endpoint_url,
    http_method: (t.http_method || 'POST').toUpperCase(),
    headers: { ...(t.headers ?? {}) },
    auth_type: t.auth_type || undefined,
    auth_token: t.auth_token || undefined,
    request_body: t.request_body ?? undefined,
    response_path: t.response_path || undefined,
    timeout_ms: t.timeout_ms && t.timeout_ms > 0 ? t.timeout_ms : AGENT_DEFAULTS.toolTimeoutMs,
    retry_count: t.retry_count && t.retry_count > 0 ? t.retry_count : 0,
  });
}

/**
 * Connector tools as calls run them. A tool whose connection is not live (disconnected after
 * publish: its draft row is `disabled_by_connection`, the snapshot still says active; deleted; or
 * another workspace's) is left out, as is an action of another provider than the connection's
 * (the connector would answer 404). Function names are unique across the call: HTTP tools first,
 * then connector actions in tool order; a later duplicate is dropped (vendors refuse duplicates).
 */
export function liveConnectorTools(tools: LiveTool[], liveConnections: ReadonlyMap<string, string>): ConnectorToolConfig[] {
  const taken = new Set(tools.filter((t) => !t.connector_binding && t.endpoint_url).map((t) => t.name));
  const out: ConnectorToolConfig[] = [];
  for (const t of tools) {
    const binding = t.connector_binding;
    const providerId = binding ? liveConnections.get(binding.connection_id) : undefined;
    if (!binding || !providerId) continue;
    const actions: ConnectorActionConfig[] = [];
    for (const a of binding.actions) {
      if (!a.name.startsWith(`${providerId}__`) || taken.has(a.name)) continue;
      taken.add(a.name);
      const fixed = { ...((a.fixed as Record<string, unknown> | undefined) ?? {}) };
      actions.push({ name: a.name, description: a.description ?? '', parameters: withoutPinned(a.parameters as Record<string, unknown>, Object.keys(fixed)), fixed });
    }
    if (actions.length === 0) continue;
    out.push({ tool_id: t.id, connection_id: binding.connection_id, provider_id: providerId, timeout_ms: t.timeout_ms && t.timeout_ms > 0 ? t.timeout_ms : AGENT_DEFAULTS.toolTimeoutMs, actions });
  }
  return out;
}

/** The schema the model sees: pinned top-level properties removed from `properties` and `required`. */
export function withoutPinned(schema: Record<string, unknown> | undefined, pinned: string[]): Record<string, unknown> {
  const base = schema && typeof schema === 'object' ? schema : { type: 'object', properties: {} };
  if (pinned.length === 0) return { ...base };
  const out: Record<string, unknown> = { ...base };
  const props = base.properties;
  if (props && typeof props === 'object') out.properties = Object.fromEntries(Object.entries(props).filter(([k]) => !pinned.includes(k)));
  if (Array.isArray(base.required)) {
    const required = (base.required as unknown[]).filter((k) => typeof k !== 'string' || !pinned.includes(k));
    // An empty `required` is invalid in older JSON Schema drafts some model vendors check against.
    if (required.length) out.required = required;
    else delete out.required;
  }
  return out;
}

/** Removes undefined and empty-string keys (optional provider settings) so stored configs carry no noise. */
function dropEmpty<T extends object>(o: T): T {
  for (const [k, v] of Object.entries(o)) if (v === undefined || v === '') delete (o as Record<string, unknown>)[k];
  return o;
}

function dropUndefined<T extends object>(o: T): T {
  for (const [k, v] of Object.entries(o)) if (v === undefined) delete (o as Record<string, unknown>)[k];
  return o;
}
