/**
 * The campaigns domain (issue 15; spec doc 2 "Campaigns"): campaigns and their CSV contacts, the
 * REST/gRPC routes, the streamed CSV upload and export, and the dialer on the job queue, which
 * places every call through the telephony domain's outbound path. See docs/campaigns.md, NOTES.md.
 */
import { CampaignService } from '../../shared/gen/voiceplane/v1/campaigns_pb.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { Jobs } from '../jobs/index.js';
import type { CallEvent, TelephonyDomain } from '../telephony/index.js';
import { createDialer, type Dialer, type DialerOptions } from './dialer.js';
import { createCampaignRawHandlers } from './http.js';
import { createOutcomeHook } from './outcomes.js';
import { campaignRoutes } from './routes.js';
import { createCampaignService } from './service.js';

export type { DialerOptions } from './dialer.js';

export type CampaignsDeps = Pick<ControlPlaneDeps, 'logger' | 'clock' | 'sql'> & {
  auth: Auth;
  jobs: Jobs;
  telephony: Pick<TelephonyDomain, 'dial' | 'calls' | 'endIfStale' | 'reconcileWithCarrier'>;
  /** Base URL the carrier's callbacks reach (known once the server listens). */
  publicBase: () => string;
  options?: DialerOptions;
};

export interface CampaignsDomain extends Domain {
  dialer: Dialer;
  /** Register on the telephony domain's call-event hook. */
  onCallEvent(ev: CallEvent): void;
  /** Starts the dialer (after the server listens: dials need the public base URL). */
  start(): Promise<void>;
}

export function createCampaignsDomain(deps: CampaignsDeps): CampaignsDomain {
  const { sql, auth, clock, logger } = deps;
  const dialer = createDialer({ ...deps, options: deps.options });
  const hook = createOutcomeHook({ sql, clock, logger, dialer });
  const wake = (id: string) => dialer.wake(id);
  const service = createCampaignService({ sql, auth, clock, logger, wake });
  let closed = false;
  return {
    services: [{ service: CampaignService, impl: service }] as ServiceBinding[],
    routes: campaignRoutes,
    rawHandlers: createCampaignRawHandlers({ sql, auth, clock, logger, wake }),
    dialer,
    onCallEvent: (ev) => hook.onCallEvent(ev),
    start: () => dialer.start(),
    async close() {
      if (closed) return;
      closed = true;
      await dialer.close();
      await hook.close();
    },
  };
}
