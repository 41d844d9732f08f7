/**
 * What an alert rule may say (pure): the metric set, the operators, the scope and the channels.
 * Every failure is a 400 naming its field (`metric`, `operator`, `scope.agent_id`,
 * `channels.webhook[1]`, ...). Metric definitions: docs/alerts.md ("Metrics").
 */
import { invalid } from '../../shared/errors.js';
import { email as emailField, intInRange, MAX_URL_CHARS, uuidField } from '../http/validate.js';

export const METRICS = ['error_rate', 'p95_latency_ms', 'call_volume', 'failed_call_rate', 'tool_error_rate', 'webhook_dead_count', 'active_calls', 'node_down'] as const;
export type Metric = (typeof METRICS)[number];

/** `p95_latency_ms` only; the default is `total` (caller's wait from end of speech to first audio). */
export const COMPONENTS = ['asr', 'llm', 'tts', 'total'] as const;
export type Component = (typeof COMPONENTS)[number];

export const OPERATORS = ['greater_than', 'less_than', 'equals', 'greater_than_or_equal', 'less_than_or_equal', 'not_equals'] as const;
export type Operator = (typeof OPERATORS)[number];

/** Metrics that are not per agent: an agent scope is refused for them. */
export const WORKSPACE_ONLY: ReadonlySet<Metric> = new Set<Metric>(['webhook_dead_count', 'node_down']);

export const DEFAULT_WINDOW_MINUTES = 5;
/** A day: bounds the rows one evaluation reads. */
export const MAX_WINDOW_MINUTES = 1440;
export const DEFAULT_COOLDOWN_MINUTES = 15;
/** A week. */
export const MAX_COOLDOWN_MINUTES = 10_080;
/** Targets per channel kind. */
export const MAX_TARGETS_PER_CHANNEL = 10;

export interface Scope {
  type: 'workspace' | 'agent';
  agentId: string | null;
}

export interface Channels {
  email: string[];
  webhook: string[];
  slack: string[];
}

export function parseMetric(value: string | undefined, isRequired: boolean): Metric | undefined {
  if (value === undefined || (value === '' && !isRequired)) return undefined;
  if (value === '') throw invalid('metric', 'is required');
  if (!(METRICS as readonly string[]).includes(value)) throw invalid('metric', `must be one of ${METRICS.join(', ')}`);
  return value as Metric;
}

export function parseOperator(value: string | undefined, isRequired: boolean): Operator | undefined {
  if (value === undefined || (value === '' && !isRequired)) return undefined;
  if (value === '') throw invalid('operator', 'is required');
  if (!(OPERATORS as readonly string[]).includes(value)) throw invalid('operator', `must be one of ${OPERATORS.join(', ')}`);
  return value as Operator;
}

/** The component a metric takes: `total` by default for p95, none for the others (400 if sent). */
export function resolveComponent(metric: Metric, value: string | undefined): Component | '' {
  if (metric !== 'p95_latency_ms') {
    if (value) throw invalid('component', 'applies to p95_latency_ms only');
    return '';
  }
  if (!value) return 'total';
  if (!(COMPONENTS as readonly string[]).includes(value)) throw invalid('component', `must be one of ${COMPONENTS.join(', ')}`);
  return value as Component;
}

export function parseScope(value: { type: string; agentId: string } | undefined): Scope | undefined {
  if (value === undefined) return undefined;
  const type = value.type || 'workspace';
  if (type === 'workspace') {
    if (value.agentId) throw invalid('scope.agent_id', 'applies to scope type agent only');
    return { type, agentId: null };
  }
  if (type !== 'agent') throw invalid('scope.type', 'must be workspace or agent');
  return { type, agentId: uuidField('scope.agent_id', value.agentId, true)! };
}

export function checkScopeFits(metric: Metric, scope: Scope): void {
  if (scope.type === 'agent' && WORKSPACE_ONLY.has(metric)) throw invalid('scope', `${metric} is measured per workspace; use scope type workspace`);
}

export function parseThreshold(value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || Math.abs(value) > 1e12) throw invalid('threshold', 'must be a finite number');
  return value;
}

export function parseWindow(value: number | undefined): number | undefined {
  return intInRange('window_minutes', value, 1, MAX_WINDOW_MINUTES);
}

export function parseCooldown(value: number | undefined): number | undefined {
  return intInRange('cooldown_minutes', value, 0, MAX_COOLDOWN_MINUTES);
}

/**
 * Emails are normalised; URLs get the shape check here (absolute, http(s), length) and the
 * address policy from the caller (`checkUrl`), which also decides whether plain http is allowed.
 */
export function parseChannels(value: Channels | undefined, checkUrl: (field: string, url: string) => string): Channels | undefined {
  if (value === undefined) return undefined;
  const list = (kind: keyof Channels, one: (field: string, v: string) => string): string[] => {
    const items = value[kind] ?? [];
    const tooMany = () => invalid(`channels.${kind}`, `must list at most ${MAX_TARGETS_PER_CHANNEL} targets`);
    // The bound counts distinct targets (after normalising: `A@X.com` and `a@x.com` are one);
    // a raw list far past it is refused before any of it is checked.
    if (items.length > MAX_TARGETS_PER_CHANNEL * 10) throw tooMany();
    const distinct = [...new Set(items.map((v, i) => one(`channels.${kind}[${i}]`, v)))];
    if (distinct.length > MAX_TARGETS_PER_CHANNEL) throw tooMany();
    return distinct;
  };
  const url = (field: string, v: string): string => {
    const t = (v ?? '').trim();
    if (!t) throw invalid(field, 'is required');
    if (t.length > MAX_URL_CHARS) throw invalid(field, `must be at most ${MAX_URL_CHARS} characters`);
    return checkUrl(field, t);
  };
  return { email: list('email', emailField), webhook: list('webhook', url), slack: list('slack', url) };
}

/** The comparison the rule names. `equals` compares exactly: metrics are counts or values rounded to 2 decimals. */
export function compare(observed: number, op: Operator, threshold: number): boolean {
  switch (op) {
    case 'greater_than':
      return observed > threshold;
    case 'less_than':
      return observed < threshold;
    case 'equals':
      return observed === threshold;
    case 'greater_than_or_equal':
      return observed >= threshold;
    case 'less_than_or_equal':
      return observed <= threshold;
    case 'not_equals':
      return observed !== threshold;
  }
}
