import type { ControlPlaneDeps } from '../domain.js';
import type { Auth } from '../http/auth.js';

/** What the agents domain (and the provider registry it hosts) needs from the control plane. */
export type AgentsDeps = Pick<ControlPlaneDeps, 'sql' | 'secrets' | 'logger' | 'clock'> & { auth: Auth };
