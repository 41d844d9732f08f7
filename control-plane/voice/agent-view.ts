/**
 * What session start needs from an agent, decoupled from the agents domain's own type. The agents
 * domain exposes `liveConfig(agentId)` (the PUBLISHED snapshot, secrets decrypted); only
 * `toAgentLiveView` below knows its shape, so a change there touches this one function.
 */
import type { LiveAgentConfig, LiveTool } from '../agents/types.js';
import type { HttpToolConfig, ProviderSettings } from '../../shared/voice/session-config.js';
import type { FlowConfig } from '../../shared/voice/flow.js';
import { resolveFlow } from './flow-config.js';

export type { LiveAgentConfig };

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
  knowledge: KnowledgeItem[];
  /** `flow` mode with a runnable published flow; absent in `single_prompt` mode. */
  flow?: FlowConfig;
  /** `flow` mode whose published flow cannot run: why (session start answers 409). */
  flowProblem?: string;
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

export function toAgentLiveView(c: LiveAgentConfig): AgentLiveView {
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
    // Connector-bound tools have no endpoint: they are not HTTP tools the engine can call (yet).
    tools: (c.tools ?? []).filter((t) => t.endpoint_url).map(toHttpTool),
    knowledge: [
      ...(c.knowledge?.always ?? []).map((k) => ({ id: k.knowledge_base_id, title: k.title ?? '', content: k.content ?? '', mode: 'always' as const })),
      ...(c.knowledge?.on_demand ?? []).map((k) => ({ id: k.knowledge_base_id, title: k.title ?? '', content: k.content ?? '', mode: 'on_demand' as const })),
    ],
    ...flowOf(c),
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

/** Removes undefined and empty-string keys (optional provider settings) so stored configs carry no noise. */
function dropEmpty<T extends object>(o: T): T {
  for (const [k, v] of Object.entries(o)) if (v === undefined || v === '') delete (o as Record<string, unknown>)[k];
  return o;
}

function dropUndefined<T extends object>(o: T): T {
  for (const [k, v] of Object.entries(o)) if (v === undefined) delete (o as Record<string, unknown>)[k];
  return o;
}
