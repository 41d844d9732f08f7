/**
 * REST routes of system analytics (spec doc 3, "System analytics and alerts"; envelope family).
 * Each answers a bare array in `data`. A query key a route does not take is a 400 naming the key
 * (a misspelt filter must not silently widen the answer).
 */
import { SystemAnalyticsService } from '../../shared/gen/voiceplane/v1/system_analytics_pb.js';
import { invalid } from '../../shared/errors.js';
import { coerceQuery, type RestRequestParts, type RestRoute } from '../http/rest.js';
import { assertKnownParams, type RecordRoute } from './params.js';

const A = '/api/v1/analytics';
const S = SystemAnalyticsService;
const RPC: Record<RecordRoute, string> = { latency: 'getLatencyMetrics', usage: 'getUsage', 'tool-calls': 'getToolMetrics' };

function strictQuery(route: RecordRoute) {
  const input = S.methods.find((m) => m.localName === RPC[route])!.input;
  return (parts: RestRequestParts) => {
    assertKnownParams(route, parts.query);
    return coerceQuery(input, parts.query);
  };
}

/** `/system-health` takes no parameters at all. */
function noQuery(parts: RestRequestParts) {
  const [first] = Object.keys(parts.query);
  if (first !== undefined) throw invalid(first, 'is not a parameter of /analytics/system-health (it takes none)');
  return {};
}

/** Usage rows are capped at 200 users: `meta` says how many there were, so a cut answer is visible. */
function usageResponse(json: Record<string, unknown>) {
  const records = (json.records ?? []) as unknown[];
  const totalUsers = Number(json.total_users ?? 0);
  return { data: records, meta: { total_users: totalUsers, truncated: totalUsers > records.length } };
}

export const systemAnalyticsRoutes: RestRoute[] = [
  { method: 'GET', path: `${A}/latency`, service: S, rpc: RPC.latency, request: strictQuery('latency'), response: (json) => ({ data: json.metrics }) },
  { method: 'GET', path: `${A}/usage`, service: S, rpc: RPC.usage, request: strictQuery('usage'), response: usageResponse },
  { method: 'GET', path: `${A}/tool-calls`, service: S, rpc: RPC['tool-calls'], request: strictQuery('tool-calls'), response: (json) => ({ data: json.metrics }) },
  { method: 'GET', path: `${A}/system-health`, service: S, rpc: 'getSystemHealth', request: noQuery, response: (json) => ({ data: json.records }) },
];
