/**
 * REST routes of the alerts domain (spec doc 3, "System analytics and alerts"; envelope family)
 * under `/api/v1/alerts`. Lists answer a bare array in `data`; `/alerts/test` answers
 * `observed_value: null` when the window holds no data.
 */
import { AlertService } from '../../shared/gen/voiceplane/v1/alerts_pb.js';
import type { RestRoute } from '../http/rest.js';

const A = '/api/v1/alerts';
const S = AlertService;

export const alertRoutes: RestRoute[] = [
  { method: 'GET', path: `${A}/rules`, service: S, rpc: 'listAlertRules', response: (json) => ({ data: json.rules }) },
  { method: 'POST', path: `${A}/rules`, service: S, rpc: 'createAlertRule', status: 201 },
  { method: 'PUT', path: `${A}/rules/:rule_id`, service: S, rpc: 'updateAlertRule' },
  { method: 'DELETE', path: `${A}/rules/:rule_id`, service: S, rpc: 'deleteAlertRule' },
  { method: 'GET', path: `${A}/events`, service: S, rpc: 'listAlertEvents', response: (json) => ({ data: json.events }) },
  { method: 'POST', path: `${A}/events/:event_id/resolve`, service: S, rpc: 'resolveAlertEvent' },
  { method: 'GET', path: `${A}/active-count`, service: S, rpc: 'getActiveAlertCount' },
  { method: 'POST', path: `${A}/test`, service: S, rpc: 'testAlertRule', response: (json) => ({ data: { observed_value: null, ...json } }) },
];
