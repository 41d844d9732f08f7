/**
 * The billing domain (issue 17, "usage metering and credits"; docs/billing.md): a per-workspace
 * credit ledger, prices per metered unit, the operator API, metering of every ended conversation
 * in the post-call outbox transaction, and the credit state engines read from the registry.
 * With BILLING_ENABLED off nothing is metered and nothing is published (engines check nothing);
 * the API still answers, so an operator can load credits before turning billing on.
 */
import { BillingService } from '../../shared/gen/voiceplane/v1/billing_pb.js';
import { FLUSH_ALL } from '../../shared/registry/index.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import type { PostCallHandler } from '../post-call/relay.js';
import { billingRoutes } from './routes.js';
import { createBillingService } from './service.js';
import { createPublisher, enqueuePublish, workPublishJobs, type Publisher } from './publish.js';
import { meterConversation } from './store.js';

export type BillingDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'registry'> & { auth: Auth; jobs: Jobs };

export interface BillingDomain extends Domain {
  publisher: Publisher;
  /** Register on the post-call relay: meters the conversation once, in the outbox transaction. */
  onConversationEnded: PostCallHandler;
}

export async function createBillingDomain(deps: BillingDeps): Promise<BillingDomain> {
  const { config, jobs, logger, registry } = deps;
  const publisher = createPublisher(deps);
  let unsubscribe: (() => Promise<void>) | undefined;
  if (config.billingEnabled) {
    await workPublishJobs(jobs, publisher, logger);
    // Redis may have been emptied while no control plane ran: republish every state (a job, so
    // one replica does it when several start together).
    await enqueuePublish(jobs, undefined);
    // A Redis restart loses the states too (they are not journaled like sessions): the registry
    // signals a reconnect with FLUSH_ALL, and every state is republished. Until then engines
    // refuse the workspaces whose key is gone (fail closed), for the seconds a republish takes.
    unsubscribe = await registry.invalidations.subscribe((topic) => {
      if (topic !== FLUSH_ALL) return;
      enqueuePublish(jobs, undefined).catch((err: Error) => logger.warn({ err }, 'billing: republish after a registry reconnect not queued'));
    });
  }
  return {
    services: [{ service: BillingService, impl: createBillingService({ ...deps, publisher }) }] as ServiceBinding[],
    routes: billingRoutes,
    publisher,
    async close() {
      await unsubscribe?.();
      unsubscribe = undefined;
    },
    async onConversationEnded(ev, tx) {
      if (!config.billingEnabled) return;
      const workspaceId = await meterConversation(tx, ev.conversation_id);
      if (workspaceId) await enqueuePublish(jobs, workspaceId, tx);
    },
  };
}
