/**
 * The analysis domain (issue 16, first slice; spec doc 3 "Analysis schema", "Analysis and
 * conversation analytics"): schemas per agent, the post-call extraction job (`analysis.extract`),
 * results and insights. Public contract: docs/analysis.md.
 */
import { AnalysisService } from '../../shared/gen/voiceplane/v1/analysis_pb.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import type { PostCallHandler } from '../post-call/relay.js';
import type { LiveConfigFn, LlmFactory } from '../conversations/summary.js';
import { createAnalyzer } from './extract.js';
import { analysisRoutes } from './routes.js';
import { createAnalysisService } from './service.js';

export type AnalysisDeps = Pick<ControlPlaneDeps, 'logger' | 'clock' | 'sql'> & {
  auth: Auth;
  jobs: Jobs;
  /** The agents domain's published-config resolver (the agent's live LLM). */
  liveConfig: LiveConfigFn;
  /** Builds the agent's LLM (conversations/summary.ts `defaultLlmFactory` over the outbound client). */
  llmFor: LlmFactory;
};

export interface AnalysisDomain extends Domain {
  /** Register on the post-call relay: every completed call of an agent with active schemas gets its job. */
  onConversationEnded: PostCallHandler;
}

export async function createAnalysisDomain(deps: AnalysisDeps): Promise<AnalysisDomain> {
  const { sql, logger, clock, jobs } = deps;
  const analyzer = await createAnalyzer({ sql, logger, clock, jobs, liveConfig: deps.liveConfig, llmFor: deps.llmFor });
  return {
    services: [{ service: AnalysisService, impl: createAnalysisService({ sql, auth: deps.auth, clock }) }] as ServiceBinding[],
    routes: analysisRoutes,
    onConversationEnded: (ev, tx) => analyzer.onConversationEnded(ev, tx),
  };
}
