/**
 * Query checks of the system analytics routes (pure). Each route takes only its own parameters:
 * the spec's (`session_id`, `agent_id`, `user_id`) plus `workspace_id`, `from` and `to`, the same
 * inclusive UTC date range as the pipeline analytics routes (issue 16). An unknown parameter, or
 * one of another route, is a 400 naming it: a misspelt filter must not silently widen the answer.
 */
import { invalid } from '../../shared/errors.js';
import { dateRange } from '../analytics/params.js';
import { text, uuidField } from '../http/validate.js';

export type RecordRoute = 'latency' | 'usage' | 'tool-calls';

/** Query parameters (snake_case, as sent) each route accepts. */
export const ROUTE_PARAMS: Readonly<Record<RecordRoute, readonly string[]>> = {
  latency: ['session_id', 'agent_id', 'workspace_id', 'from', 'to'],
  usage: ['user_id', 'agent_id', 'workspace_id', 'from', 'to'],
  'tool-calls': ['agent_id', 'session_id', 'workspace_id', 'from', 'to'],
};

/** Longest `session_id` / `user_id` accepted (the conversations routes' bound). */
export const MAX_ID_CHARS = 256;

const DAY_MS = 86_400_000;

export interface RawQuery {
  sessionId?: string;
  agentId?: string;
  userId?: string;
  workspaceId?: string;
  from?: string;
  to?: string;
}

export interface AnalyticsQuery {
  sessionId?: string;
  agentId?: string;
  userId?: string;
  workspaceId?: string;
  /** Inclusive dates as given or defaulted. */
  from: string;
  to: string;
  /** `from` 00:00 UTC and the midnight after `to`: the SQL bounds on `conversations.started_at`. */
  start: Date;
  end: Date;
}

const FIELD_OF: Record<string, keyof RawQuery> = {
  session_id: 'sessionId',
  agent_id: 'agentId',
  user_id: 'userId',
  workspace_id: 'workspaceId',
  from: 'from',
  to: 'to',
};

/**
 * REST: every query key must be one of the route's, with a value: `agent_id=` (an unset template
 * variable) would otherwise read as no filter and answer for the whole tenant.
 */
export function assertKnownParams(route: RecordRoute, query: Record<string, string | string[]>): void {
  for (const [k, v] of Object.entries(query)) {
    if (!ROUTE_PARAMS[route].includes(k)) throw invalid(k, `is not a parameter of /analytics/${route} (accepted: ${ROUTE_PARAMS[route].join(', ')})`);
    if (typeof v === 'string' && v.trim() === '') throw invalid(k, 'must not be empty (leave the parameter out for no filter)');
  }
}

export function parseQuery(route: RecordRoute, req: RawQuery, nowMs: number): AnalyticsQuery {
  // gRPC / Connect callers set message fields, not query keys: the same rule on set fields.
  for (const [name, key] of Object.entries(FIELD_OF)) if (req[key]?.trim() && !ROUTE_PARAMS[route].includes(name)) throw invalid(name, `is not a parameter of /analytics/${route}`);
  const { fromMs, toMs } = dateRange(req, nowMs);
  return {
    sessionId: text('session_id', req.sessionId, { maxChars: MAX_ID_CHARS }),
    agentId: uuidField('agent_id', req.agentId),
    userId: text('user_id', req.userId, { maxChars: MAX_ID_CHARS }),
    workspaceId: uuidField('workspace_id', req.workspaceId),
    from: isoDay(fromMs),
    to: isoDay(toMs),
    start: new Date(fromMs),
    end: new Date(toMs + DAY_MS),
  };
}

function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
