import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import type { RestRoute } from '../http/rest.js';

const live = (path: string): RestRoute => ({ method: 'GET', path, service: HealthService, rpc: 'live', family: 'raw' });
const ready = (path: string): RestRoute => ({ method: 'GET', path, service: HealthService, rpc: 'ready', family: 'raw' });

/** Health needs no auth. `/ready` checks the database and the registry (503 when either fails). */
export const healthRoutes: RestRoute[] = [
  live('/healthz'),
  live('/live'),
  ready('/ready'),
  live('/api/v1/healthz'),
  live('/api/v1/live'),
  ready('/api/v1/ready'),
  // Spec doc 1, provider registry: "/providers/health, /healthz, /ready, /live: no auth, liveness".
  live('/api/v1/providers/health'),
  live('/api/v1/providers/healthz'),
  live('/api/v1/providers/live'),
  ready('/api/v1/providers/ready'),
];
