/**
 * The webhooks domain (issue 14; spec doc 3): per-workspace endpoint and secret, signed
 * `call.completed` events for carrier calls, durable deliveries with the spec's retry schedule,
 * the delivery log and manual retries. Work runs on the control plane's job queue
 * (`webhook.call-completed`, `webhook.deliver`); every dial goes through the outbound client.
 */
import { WebhookService } from '../../shared/gen/voiceplane/v1/webhooks_pb.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import type { PostCallHandler } from '../post-call/relay.js';
import { createDeliveryWorker, type DeliveryWorker, type WebhookSend } from './deliver.js';
import { createCallEvents, type CallEvents } from './events.js';
import { webhookRoutes } from './routes.js';
import { createWebhookService, type WebhookServiceDeps } from './service.js';

export type WebhooksDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'secrets'> & {
  auth: Auth;
  jobs: Jobs;
  /** Every delivery is dialled through it (address policy at connect time, no redirects). */
  outbound: OutboundClient;
  /** Jitter source in [0, 1) (tests pin it). Default Math.random. */
  random?: () => number;
  /** Seconds after an answered call ended before its missing conversation makes it a failed event (tests shorten it). */
  unrecordedCheckS?: number;
  /** Save-time name resolution (tests). Default: the system resolver. */
  resolver?: WebhookServiceDeps['resolver'];
  /** Workspace carrier accounts, set and shown with the call-center settings (telephony). */
  carrierAccounts?: WebhookServiceDeps['carrierAccounts'];
};

export interface WebhooksDomain extends Domain {
  deliveries: DeliveryWorker;
  events: CallEvents;
  /** Register on the post-call relay: every ended carrier call gets its event job. */
  onConversationEnded: PostCallHandler;
}

export async function createWebhooksDomain(deps: WebhooksDeps): Promise<WebhooksDomain> {
  const { config, logger, clock, sql, jobs } = deps;
  // Redirects are never followed (maxRedirects 0 is the client's default): a 3xx is dead.
  const send: WebhookSend = (url, init) => deps.outbound.fetch(url, init);
  const deliveries = createDeliveryWorker({ sql, jobs, clock, logger, secrets: deps.secrets, send, random: deps.random });
  const events = createCallEvents({ sql, jobs, clock, logger, deliveries, publicBaseUrl: config.publicBaseUrl, unrecordedCheckS: deps.unrecordedCheckS });
  if (config.webhooksEnabled) {
    // Switched off: nothing is dialled; queued jobs wait in the queue for a deployment that sends.
    // Attempts wait on the network, not the CPU; one workspace holds at most
    // MAX_IN_FLIGHT_PER_WORKSPACE of these slots (deliver.ts).
    await jobs.work('webhook.deliver', (job) => deliveries.run(job), { concurrency: 16 });
    await jobs.work('webhook.call-completed', (job) => events.run(job), { concurrency: 2 });
    await jobs.work('webhook.call-failed', (job) => events.runFailed(job), { concurrency: 1 });
  }
  const service = createWebhookService({
    sql,
    auth: deps.auth,
    clock,
    logger,
    secrets: deps.secrets,
    policy: deps.outbound.policy,
    deliveries,
    events,
    enabled: config.webhooksEnabled,
    allowHttp: config.webhookAllowHttp,
    resolver: deps.resolver,
    carrierAccounts: deps.carrierAccounts,
  });
  return {
    services: [{ service: WebhookService, impl: service }] as ServiceBinding[],
    routes: webhookRoutes,
    deliveries,
    events,
    onConversationEnded: (ev, tx) => events.onConversationEnded(ev, tx),
  };
}
