/**
 * Agent fields: defaults applied on create and the checks shared by create and update. Pure.
 * The defaults are documented in docs/agents.md; change both together.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { invalid } from '../../../shared/errors.js';
import { AGENT_MODES, type AgentFields } from '../types.js';
import { intInRange, numberInRange, oneOf, optionalText, required } from '../../http/validate.js';

export const AGENT_DEFAULTS: Omit<AgentFields, 'name'> = {
  description: '',
  system_prompt: '',
  welcome_message: '',
  language: 'en',
  max_turns: 50,
  connection_type: 'voice',
  interrupt_enabled: true,
  vad_threshold: 0.5,
  silence_timeout_ms: 8000,
  is_active: true,
  allow_human_transfer: false,
  mode: 'single_prompt',
  metadata: {},
  connectors: [],
};

/** Every field a create writes (what a repeated create with a client-chosen id must match). */
export const AGENT_FIELD_KEYS: readonly string[] = ['name', ...Object.keys(AGENT_DEFAULTS)];

export const CONNECTION_TYPES = ['voice', 'text'] as const;
export const LIMITS = {
  descriptionChars: 10_000,
  systemPromptChars: 100_000,
  welcomeChars: 10_000,
  maxTurns: 1000,
  silenceTimeoutMs: 600_000,
  metadataBytes: 64 * 1024,
  connectors: 50,
  connectorNameChars: 100,
};

const LANGUAGE_RE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

/** What an agent create/update request may carry (proto field names, camelCase). */
export interface AgentFieldInput {
  name?: string;
  description?: string;
  systemPrompt?: string;
  welcomeMessage?: string;
  language?: string;
  maxTurns?: number;
  connectionType?: string;
  interruptEnabled?: boolean;
  vadThreshold?: number;
  silenceTimeoutMs?: number;
  isActive?: boolean;
  allowHumanTransfer?: boolean;
  mode?: string;
  metadata?: JsonObject;
}

/** Validated subset: only the fields present in the input. */
export function checkAgentFields(req: AgentFieldInput, opts: { create: boolean }): Partial<AgentFields> {
  const out: Partial<AgentFields> = {};
  if (opts.create || req.name !== undefined) out.name = required('name', req.name);
  set(out, 'description', optionalText('description', req.description, LIMITS.descriptionChars));
  set(out, 'system_prompt', optionalText('system_prompt', req.systemPrompt, LIMITS.systemPromptChars));
  set(out, 'welcome_message', optionalText('welcome_message', req.welcomeMessage, LIMITS.welcomeChars));
  if (req.language !== undefined) {
    if (!LANGUAGE_RE.test(req.language)) throw invalid('language', 'must be a language code such as en or en-US');
    out.language = req.language;
  }
  set(out, 'max_turns', intInRange('max_turns', req.maxTurns, 1, LIMITS.maxTurns));
  set(out, 'connection_type', oneOf('connection_type', req.connectionType, CONNECTION_TYPES));
  set(out, 'interrupt_enabled', req.interruptEnabled);
  set(out, 'vad_threshold', numberInRange('vad_threshold', req.vadThreshold, 0, 1));
  set(out, 'silence_timeout_ms', intInRange('silence_timeout_ms', req.silenceTimeoutMs, 0, LIMITS.silenceTimeoutMs));
  set(out, 'is_active', req.isActive);
  set(out, 'allow_human_transfer', req.allowHumanTransfer);
  set(out, 'mode', oneOf('mode', req.mode, AGENT_MODES));
  if (req.metadata !== undefined) {
    if (JSON.stringify(req.metadata).length > LIMITS.metadataBytes) throw invalid('metadata', `must be at most ${LIMITS.metadataBytes} bytes of JSON`);
    out.metadata = req.metadata;
  }
  return out;
}

/** `connectors` on update: non-empty strings, trimmed, de-duplicated. */
export function checkConnectors(values: string[]): string[] {
  const out: string[] = [];
  values.forEach((v, i) => {
    const t = v.trim();
    if (!t) throw invalid(`connectors[${i}]`, 'must be a non-empty string');
    if (t.length > LIMITS.connectorNameChars) throw invalid(`connectors[${i}]`, `must be at most ${LIMITS.connectorNameChars} characters`);
    // Ids and names match case-insensitively (spec): `HubSpot` after `hubspot` is the same connector.
    if (!out.some((o) => o.toLowerCase() === t.toLowerCase())) out.push(t);
  });
  if (out.length > LIMITS.connectors) throw invalid('connectors', `at most ${LIMITS.connectors} connectors`);
  return out;
}

function set<K extends keyof AgentFields>(out: Partial<AgentFields>, key: K, value: AgentFields[K] | undefined): void {
  if (value !== undefined) out[key] = value;
}
