/**
 * Which configuration a run tests (versioning rule 3) and the session config the conversation
 * runs from. `agent_version` absent: the live version; `0`: the draft as it is now (frozen into
 * the run, so later edits do not change a run in progress); `n`: published version n. The session
 * config is built exactly as a voice session's (`buildSessionConfig`), so prompt composition,
 * knowledge, tools and limits are the ones a call would get.
 */
import { AppError, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { Sql } from '../../shared/db/client.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { PROVIDER_TYPES, type AgentRow, type AgentSnapshot } from '../agents/types.js';
import { boundMemoryIds, liveFromSnapshot } from '../agents/versions/snapshot.js';
import { memoryItemsFor, readDraftSnapshot } from '../agents/versions/store.js';
import { ownerFallbacks } from '../providers/resolve.js';
import { toAgentLiveView } from '../voice/agent-view.js';
import { buildSessionConfig } from '../voice/build-config.js';

/** Stands in for a missing ASR or TTS provider: never built in text mode. */
export const TEXT_MODE_UNUSED = { provider_name: 'unused-in-text-mode' };

/** The draft's version number in runs. */
export const DRAFT_VERSION = 0;

export async function snapshotFor(sql: Sql, agent: AgentRow, version: number | undefined): Promise<{ version: number; snapshot: AgentSnapshot }> {
  if (version === DRAFT_VERSION) {
    const fallbacks = await ownerFallbacks(sql, agent.id, agent.user_id, [...PROVIDER_TYPES]);
    return { version: DRAFT_VERSION, snapshot: await readDraftSnapshot(sql, agent.id, fallbacks) };
  }
  const n = version ?? agent.live_version;
  if (n === null || n === undefined) {
    throw new AppError('CONFLICT', 'the agent has no published version: pass agent_version 0 to test the draft, or publish first', {
      details: [{ field: 'agent_version', problem: 'no live version to default to' }],
    });
  }
  const [row] = await sql<{ snapshot: AgentSnapshot }[]>`select snapshot from agent_versions where agent_id = ${agent.id} and version_number = ${n}`;
  if (!row) throw notFound(`version ${n}`);
  return { version: n, snapshot: row.snapshot };
}

/** The self-contained config one simulated conversation runs from (secrets decrypted, knowledge read now). */
export async function sessionConfigFor(sql: Sql, secrets: SecretBox, version: number, snapshot: AgentSnapshot, runId: string, nowMs: number): Promise<SessionConfig> {
  const memory = await memoryItemsFor(sql, snapshot.workspace_id, boundMemoryIds(snapshot));
  const live = liveFromSnapshot(snapshot, { version_number: version, published_at: '' }, secrets, memory);
  // Session start refuses never-published agents; a test of the draft runs it as it stands.
  const base = toAgentLiveView(live);
  // Text mode never opens ASR or TTS: a version without them can still be tested (its LLM is required).
  if (!base.providers.llm?.provider_name) {
    const which = version === DRAFT_VERSION ? "agent's draft" : `agent's version ${version}`;
    throw new AppError('MISSING_PROVIDER', `${which} has no llm provider`, { details: [{ field: 'providers.llm', problem: 'missing' }] });
  }
  const providers = { ...base.providers, asr: base.providers.asr ?? TEXT_MODE_UNUSED, tts: base.providers.tts ?? TEXT_MODE_UNUSED };
  const view = { ...base, providers, versionNumber: Math.max(1, version) };
  const config = buildSessionConfig(view, { agent_id: snapshot.agent_id, connection_type: 'simulation', session_metadata: { test_run_id: runId } }, { sessionId: newId(), nowMs });
  config.agent_version = version;
  return config;
}
