/**
 * What a post-call LLM job (analysis extraction, QA scoring) needs before it asks: the agent's
 * published LLM settings, the transcript and a provider. Failures that retrying cannot heal are
 * `CannotAsk` (the job records them as final); anything else (database) is thrown for a retry.
 */
import { AppError } from '../../shared/errors.js';
import type { Sql } from '../../shared/db/client.js';
import { transcriptOf, type LiveConfigFn, type LlmFactory } from '../conversations/summary.js';

export class CannotAsk extends Error {}

export interface PrepareDeps {
  sql: Sql;
  liveConfig?: LiveConfigFn;
  llmFor: LlmFactory;
}

export async function prepareAsk(deps: PrepareDeps, agentId: string, conversationId: string) {
  if (!deps.liveConfig) throw new CannotAsk('no agent config resolver (liveConfig) wired');
  let live: Awaited<ReturnType<LiveConfigFn>>;
  try {
    live = await deps.liveConfig(agentId);
  } catch (err) {
    // Unknown or never-published agent: final. Anything else (database) is retried.
    if (err instanceof AppError && err.status < 500) throw new CannotAsk(err.message);
    throw err;
  }
  const settings = live?.providers?.llm;
  if (!settings?.provider_name) throw new CannotAsk('the agent has no published LLM');
  const transcript = await transcriptOf(deps.sql, conversationId);
  if (!transcript) throw new CannotAsk('empty transcript');
  let llm;
  try {
    llm = await deps.llmFor(settings);
  } catch (err) {
    // A configuration the registry refuses (unknown provider, missing key) does not heal by retrying.
    throw new CannotAsk((err as Error).message);
  }
  return { llm, settings, transcript };
}
