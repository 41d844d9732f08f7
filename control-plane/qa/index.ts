/**
 * The QA domain (issue 16, "QA"; spec doc 3 "QA rubric", "QA"): rubrics per workspace bound to
 * agents, the post-call scoring job (`qa.score`), scores and reviews. Public contract: docs/qa.md.
 */
import { QaService } from '../../shared/gen/voiceplane/v1/qa_pb.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import type { PostCallHandler } from '../post-call/relay.js';
import type { LiveConfigFn, LlmFactory } from '../conversations/summary.js';
import { qaRoutes } from './routes.js';
import { createScorer } from './score.js';
import { createQaService } from './service.js';

export type QaDeps = Pick<ControlPlaneDeps, 'logger' | 'clock' | 'sql'> & {
  auth: Auth;
  jobs: Jobs;
  /** The agents domain's published-config resolver (the agent's live LLM). */
  liveConfig: LiveConfigFn;
  /** Builds the agent's LLM (conversations/summary.ts `defaultLlmFactory` over the outbound client). */
  llmFor: LlmFactory;
};

export interface QaDomain extends Domain {
  /** Register on the post-call relay: every completed conversation of an agent with an active rubric gets its pending score and job. */
  onConversationEnded: PostCallHandler;
}

export async function createQaDomain(deps: QaDeps): Promise<QaDomain> {
  const { sql, logger, clock, jobs } = deps;
  const scorer = await createScorer({ sql, logger, clock, jobs, liveConfig: deps.liveConfig, llmFor: deps.llmFor });
  return {
    services: [{ service: QaService, impl: createQaService({ sql, auth: deps.auth, clock }) }] as ServiceBinding[],
    routes: qaRoutes,
    onConversationEnded: (ev, tx) => scorer.onConversationEnded(ev, tx),
  };
}
