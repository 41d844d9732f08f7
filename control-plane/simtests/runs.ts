/**
 * Creating a run: resolves the tested version (tested-config.ts), checks that a session could be
 * built from it (a version without an LLM is refused now, 400 MISSING_PROVIDER, not later as a
 * failed run), freezes the cases and the configuration, and inserts the run, one `pending` result
 * per case and the `simtests.run` job in ONE transaction: the job exists iff the run does.
 */
import { AppError, invalid } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Clock } from '../../shared/clock.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { Sql } from '../../shared/db/client.js';
import type { AgentRow } from '../agents/types.js';
import type { Runner } from './runner.js';
import { sessionConfigFor, snapshotFor, TEXT_MODE_UNUSED } from './tested-config.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import * as store from './store.js';

/** Cases in one run. */
export const MAX_CASES_PER_RUN = 200;

export interface RunRequest {
  /** Absent: the live version; 0: the draft. */
  version?: number;
  /** Absent: every case (or every case tagged `tag`). */
  caseIds?: string[];
  /** Only cases carrying this tag (the publish gate: `gate`). */
  tag?: string;
  triggeredBy: 'api' | 'publish_gate';
  /** Default `text`. */
  mode?: store.RunMode;
}

export interface RunCreator {
  create(agent: AgentRow, req: RunRequest): Promise<store.RunRow>;
}

export function createRunCreator(deps: { sql: Sql; secrets: SecretBox; clock: Clock; runner: Runner }): RunCreator {
  const { sql } = deps;
  return {
    async create(agent, req) {
      const { version, snapshot } = await snapshotFor(sql, agent, req.version);
      const all = await store.listCases(sql, agent.id);
      let cases = req.tag ? all.filter((c) => c.tags.includes(req.tag!)) : all;
      if (req.caseIds) {
        const byId = new Map(all.map((c) => [c.id, c]));
        const unknown = req.caseIds.findIndex((id) => !byId.has(id));
        if (unknown >= 0) throw invalid(`case_ids[${unknown}]`, 'is not a test case of this agent');
        cases = req.caseIds.map((id) => byId.get(id)!);
      }
      if (cases.length === 0) throw new AppError('INVALID_REQUEST', 'the agent has no test cases to run', { details: [{ field: 'case_ids', problem: 'no test cases' }] });
      if (cases.length > MAX_CASES_PER_RUN) throw invalid('case_ids', `a run holds at most ${MAX_CASES_PER_RUN} cases`);
      const runId = newId();
      // Refuses a configuration no session could run (no LLM, unknown provider) before anything is stored.
      const config = await sessionConfigFor(sql, deps.secrets, version, snapshot, runId, deps.clock.now());
      const mode = req.mode ?? 'text';
      if (mode === 'audio') requireSpeech(config);
      return (await sql.begin(async (tx) => {
        const run = await store.insertRun(
          tx as unknown as Sql,
          { id: runId, agent_id: agent.id, workspace_id: agent.workspace_id, agent_version: version, mode, triggered_by: req.triggeredBy, snapshot: { snapshot } },
          cases,
          cases.map(() => newId()),
        );
        await deps.runner.enqueue(runId, tx as unknown as Sql);
        return run;
      })) as store.RunRow;
    },
  };
}

/** Audio mode speaks and hears through the version's own ASR and TTS: both must exist. */
function requireSpeech(config: SessionConfig): void {
  const missing = (['asr', 'tts'] as const).filter((k) => config.providers[k].provider_name === TEXT_MODE_UNUSED.provider_name);
  if (missing.length) {
    throw new AppError('MISSING_PROVIDER', `audio mode needs the version's ${missing.join(' and ')} provider`, {
      details: missing.map((k) => ({ field: `providers.${k}`, problem: 'missing (required by mode audio)' })),
    });
  }
}
