/**
 * REST routes of the portal domain (spec doc 3 "Human agent portal admin", "Sessions"; envelope
 * family). Listings answer the array itself as `data`, as the spec's "Returns" column says.
 */
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import { PortalService, ShiftRequestSchema } from '../../shared/gen/voiceplane/v1/portal_pb.js';
import { defaultRequest, type RestRequestParts, type RestRoute } from '../http/rest.js';
import { invalid } from '../../shared/errors.js';

const S = PortalService;
const P = '/api/v1/agent-portal';
const A = `${P}/admin`;
const C = '/api/v1/call-center/agents';
const list = (key: string) => (json: Record<string, unknown>) => ({ data: json[key] ?? [] });
const paged = (key: string) => (json: Record<string, unknown>) => ({ data: json[key] ?? [], meta: json.meta });

export const portalRoutes: RestRoute[] = [
  { method: 'POST', path: C, service: S, rpc: 'createHumanAgent', status: 201 },
  { method: 'GET', path: C, service: S, rpc: 'listHumanAgents', response: paged('agents') },
  { method: 'GET', path: `${C}/:agent_id`, service: S, rpc: 'getHumanAgent' },
  { method: 'PATCH', path: `${C}/:agent_id`, service: S, rpc: 'updateHumanAgent' },
  { method: 'DELETE', path: `${C}/:agent_id`, service: S, rpc: 'deactivateHumanAgent' },
  { method: 'POST', path: `${A}/set-password`, service: S, rpc: 'setPassword' },
  { method: 'POST', path: `${A}/reset-password`, service: S, rpc: 'resetPassword' },
  { method: 'POST', path: `${A}/send-credentials`, service: S, rpc: 'sendCredentials' },
  { method: 'GET', path: `${A}/password-audit`, service: S, rpc: 'passwordAudit', response: list('entries') },
  { method: 'GET', path: `${A}/presence/realtime`, service: S, rpc: 'presenceRealtime', response: list('rows') },
  { method: 'GET', path: `${A}/presence/attendance`, service: S, rpc: 'attendance', response: list('rows') },
  { method: 'GET', path: `${A}/presence/timeline/:agent_id`, service: S, rpc: 'timeline', response: list('events') },
  { method: 'GET', path: `${A}/presence/alerts`, service: S, rpc: 'presenceAlerts', response: list('alerts') },
  { method: 'POST', path: `${A}/presence/alerts/:alert_id/acknowledge`, service: S, rpc: 'acknowledgeAlert' },
  { method: 'POST', path: `${A}/presence/shifts`, service: S, rpc: 'upsertShift', status: 201, request: shiftRequest },
  { method: 'GET', path: `${A}/presence/shifts/:agent_id`, service: S, rpc: 'agentShifts', response: list('shifts') },
  { method: 'DELETE', path: `${A}/presence/shifts/:shift_id`, service: S, rpc: 'deleteShift' },
  { method: 'POST', path: '/api/v1/call-center/calls/:call_id/handoff', service: S, rpc: 'requestHandoff' },
  { method: 'POST', path: `${P}/login`, service: S, rpc: 'portalLogin', jsonContentTypeOnly: true },
  { method: 'POST', path: `${P}/reset-password`, service: S, rpc: 'confirmReset' },
  // Spec: "/agent-portal/health: liveness; aliases /healthz, /ready, /live", under the portal's own
  // prefix as the voice and conversations families serve theirs. No bearer. `/ready` is the
  // control plane's readiness (as every `/ready`): the same 200 while the database and the
  // registry answer, 503 SERVICE_UNAVAILABLE (Retry-After: 1) when either is down or it drains.
  { method: 'GET', path: `${P}/health`, service: HealthService, rpc: 'live', family: 'raw' },
  { method: 'GET', path: `${P}/healthz`, service: HealthService, rpc: 'live', family: 'raw' },
  { method: 'GET', path: `${P}/live`, service: HealthService, rpc: 'live', family: 'raw' },
  { method: 'GET', path: `${P}/ready`, service: HealthService, rpc: 'ready', family: 'raw' },
  { method: 'GET', path: '/api/v1/sessions/active', service: S, rpc: 'activeSessions', response: list('sessions') },
];

/**
 * `day_of_week` is required (spec): over JSON a missing one would read as 0 and make a Sunday
 * shift. gRPC cannot tell 0 from absent, so there 0 is Sunday, as the field says.
 */
function shiftRequest(parts: RestRequestParts): unknown {
  const body = parts.body as Record<string, unknown> | undefined;
  if (body && typeof body === 'object' && !Array.isArray(body) && (body.day_of_week ?? body.dayOfWeek) == null) {
    throw invalid('day_of_week', 'is required: 0 (Sunday) to 6 (Saturday)');
  }
  return defaultRequest(ShiftRequestSchema, parts);
}
