/**
 * The alerts domain (issue 17; spec doc 3 "System analytics and alerts"): rules per workspace,
 * the evaluator (`alerts.evaluate`, one tick at a time across replicas) and notifications
 * (`alerts.notify`, one job per channel target). Public contract: docs/alerts.md.
 */
import { AlertService } from '../../shared/gen/voiceplane/v1/alerts_pb.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { Mailer } from '../accounts/mail.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import { createEvaluator, type Evaluator } from './evaluator.js';
import { createNotifier, type Notifier } from './notify.js';
import { alertRoutes } from './routes.js';
import { createAlertService } from './service.js';

export type AlertsDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'secrets' | 'registry'> & {
  auth: Auth;
  jobs: Jobs;
  mailer: Mailer;
  /** Webhook and Slack channels are dialled through it (address policy at connect time, no redirects). */
  outbound: OutboundClient;
};

export interface AlertsDomain extends Domain {
  evaluator: Evaluator;
  notifier: Notifier;
}

export async function createAlertsDomain(deps: AlertsDeps): Promise<AlertsDomain> {
  const { config, logger, clock, sql, jobs } = deps;
  const notifier = createNotifier({ sql, jobs, clock, logger, secrets: deps.secrets, mailer: deps.mailer, send: (url, init) => deps.outbound.fetch(url, init) });
  const evaluator = createEvaluator({ sql, jobs, clock, logger, registry: deps.registry, notifier, intervalS: config.alertsEvalIntervalS });
  await jobs.work('alerts.notify', (job) => notifier.run(job), { concurrency: 2 });
  await jobs.work('alerts.evaluate', (job) => evaluator.run(job), { concurrency: 1 });
  await jobs.keepChain(() => evaluator.kick());
  const service = createAlertService({ sql, auth: deps.auth, clock, registry: deps.registry, policy: deps.outbound.policy, allowHttp: config.webhookAllowHttp });
  return {
    services: [{ service: AlertService, impl: service }] as ServiceBinding[],
    routes: alertRoutes,
    evaluator,
    notifier,
  };
}
