/**
 * REST routes of the alerts domain (spec doc 3, "System analytics and alerts"; envelope family)
 * under `/api/v1/alerts`. Lists answer a bare array in `data`; `/alerts/test` answers
 * `observed_value: null` when the window holds no data.
 *
 * Rules and events are shaped here for REST: what is not set is `null`, as in the alert webhook
 * body (notify.ts `eventPayload`), not the proto's empty string: `last_evaluated_at` and
 * `last_value` before the first evaluation, `resolved_at` / `resolution` / `resolved_by` of an
 * active event (and `resolved_by` of an automatic resolve), `component` of a metric without one,
 * `scope.agent_id` of a workspace scope, a notification's `last_error` and `delivered_at`.
 * Connect and gRPC keep the proto's zero values.
 */
import { AlertService } from '../../shared/gen/voiceplane/v1/alerts_pb.js';
import type { RestRoute } from '../http/rest.js';

const A = '/api/v1/alerts';
const S = AlertService;

type Json = Record<string, unknown>;

/** `""` or absent -> null. */
const orNull = (v: unknown): unknown => (v === undefined || v === '' ? null : v);

function scopeView(scope: unknown): Json {
  const s = (scope ?? {}) as Json;
  return { ...s, agent_id: orNull(s.agent_id) };
}

export function restRule(json: Json): Json {
  return { ...json, component: orNull(json.component), scope: scopeView(json.scope), last_evaluated_at: orNull(json.last_evaluated_at), last_value: orNull(json.last_value) };
}

export function restEvent(json: Json): Json {
  return {
    ...json,
    component: orNull(json.component),
    scope: scopeView(json.scope),
    resolved_at: orNull(json.resolved_at),
    resolution: orNull(json.resolution),
    resolved_by: orNull(json.resolved_by),
    notifications: ((json.notifications ?? []) as Json[]).map((n) => ({ ...n, last_error: orNull(n.last_error), delivered_at: orNull(n.delivered_at) })),
  };
}

const rule = (json: Json) => ({ data: restRule(json) });

export const alertRoutes: RestRoute[] = [
  { method: 'GET', path: `${A}/rules`, service: S, rpc: 'listAlertRules', response: (json) => ({ data: ((json.rules ?? []) as Json[]).map(restRule) }) },
  { method: 'POST', path: `${A}/rules`, service: S, rpc: 'createAlertRule', status: 201, response: rule },
  { method: 'PUT', path: `${A}/rules/:rule_id`, service: S, rpc: 'updateAlertRule', response: rule },
  { method: 'DELETE', path: `${A}/rules/:rule_id`, service: S, rpc: 'deleteAlertRule' },
  { method: 'GET', path: `${A}/events`, service: S, rpc: 'listAlertEvents', response: (json) => ({ data: ((json.events ?? []) as Json[]).map(restEvent) }) },
  { method: 'POST', path: `${A}/events/:event_id/resolve`, service: S, rpc: 'resolveAlertEvent' },
  { method: 'GET', path: `${A}/active-count`, service: S, rpc: 'getActiveAlertCount' },
  { method: 'POST', path: `${A}/test`, service: S, rpc: 'testAlertRule', response: (json) => ({ data: { observed_value: null, ...json } }) },
];
