/**
 * Hand-off rows against real Postgres. The pick under concurrency: people take up to
 * `max_concurrent_calls` calls, so simultaneous requests in one workspace must all see a person
 * with room (a row lock with `skip locked` hid a person another request was offering to, and the
 * caller heard "no one is available" while they had a free line), and never offer past the limit.
 * And the sweep's end of transcripts that can no longer arrive (they held `call.completed`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../shared/db/client.js';
import { migrate } from '../../control-plane/db/migrate.js';
import { newId } from '../../shared/ids.js';
import { realClock } from '../../shared/clock.js';
import { createHandoff, type Handoff, type HandoffDeps } from '../../control-plane/portal/handoff.js';
import { createTranscriber, NO_RECORDING_AFTER_MS } from '../../control-plane/portal/transcribe.js';
import { captureLogger, dropSchema, TEST_DATABASE_URL, uniqueName } from '../helpers/infra.js';

const schema = uniqueName('t_pick');
let sql: Sql;
let handoff: Handoff;
const ws = newId();
const spoken: string[] = [];

async function person(name: string, maxCalls: number): Promise<string> {
  const id = newId();
  await sql`insert into human_agents (id, workspace_id, display_name, agent_code, max_concurrent_calls, status, last_heartbeat_at)
            values (${id}, ${ws}, ${name}, ${name}, ${maxCalls}, 'available', now())`;
  return id;
}

/** A transcriber on this suite's schema; jobs and the outbound client are never reached here. */
const transcriberWith = (deps: Pick<Parameters<typeof createTranscriber>[0], 'liveConfig' | 'fetchRecording'>) =>
  createTranscriber({ sql, jobs: {} as never, clock: realClock, logger: captureLogger().logger, outbound: {} as never, ...deps });
const requestFor = () => ({ workspaceId: ws, callId: newId(), sessionId: newId(), aiAgentId: newId() });

beforeAll(async () => {
  sql = createSql(TEST_DATABASE_URL, { schema, max: 8 });
  await sql.unsafe(`create schema if not exists "${schema}"`);
  await migrate(sql);
  const user = newId();
  await sql`insert into users (id, email, password_hash) values (${user}, ${`${user}@pick.test`}, 'x')`;
  await sql`insert into workspaces (id, user_id, name) values (${ws}, ${user}, 'pick')`;
  const deps = {
    sql,
    clock: realClock,
    logger: captureLogger().logger,
    presence: {} as HandoffDeps['presence'],
    bus: { publish: async () => {} } as unknown as HandoffDeps['bus'],
    heartbeatTimeoutS: 60,
    liveConfig: async () => ({}) as never,
    dialClient: async () => 'twilio',
    handOffRefusal: async () => undefined,
    say: async (_session: string, text: string) => void spoken.push(text),
  } satisfies HandoffDeps;
  handoff = createHandoff(deps);
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await dropSchema(schema);
});

describe('hand-off pick', () => {
  it('simultaneous requests fill every free line and none past the limit', async () => {
    const ana = await person('ana', 3);
    const ben = await person('ben', 2);
    const results = await Promise.all(Array.from({ length: 7 }, () => handoff.request(requestFor())));
    const offered = results.filter((r) => r.status === 'offered');
    expect(offered).toHaveLength(5);
    expect(results.filter((r) => r.status === 'no_agent_available')).toHaveLength(2);
    const per = (id: string) => offered.filter((r) => r.humanAgentId === id).length;
    expect([per(ana), per(ben)]).toEqual([3, 2]);
    expect(spoken).toHaveLength(2);
  });

  it('a pending transcript whose recording never came ends failed after the bound; a young or queued one stays', async () => {
    const ago = (ms: number) => new Date(Date.now() - ms);
    async function ended(endedAt: Date, recordingUrl: string | null): Promise<{ id: string; conversationId: string }> {
      const id = newId();
      const conversationId = newId();
      const callId = newId();
      await sql`insert into conversations (id, session_id, agent_id, workspace_id, call_id, segment_kind, status, metadata)
                values (${conversationId}, ${`human:${id}`}, ${newId()}, ${ws}, ${callId}, 'human', 'completed', ${sql.json({ transcription_status: 'pending' } as never)})`;
      await sql`insert into human_handoffs (id, workspace_id, call_id, ai_agent_id, status, offered_at, ended_at, conversation_id, transcription_status, recording_url)
                values (${id}, ${ws}, ${callId}, ${newId()}, 'ended', ${endedAt}, ${endedAt}, ${conversationId}, 'pending', ${recordingUrl})`;
      return { id, conversationId };
    }
    const lost = await ended(ago(NO_RECORDING_AFTER_MS + 1000), null);
    const young = await ended(ago(30_000), null);
    const queued = await ended(ago(NO_RECORDING_AFTER_MS + 1000), 'https://api.example.test/rec.wav');
    const transcriber = transcriberWith({ liveConfig: async () => ({}) as never, fetchRecording: async () => new Uint8Array() });
    expect(await transcriber.abandonStale()).toBe(1);
    const status = async (id: string) => (await sql<{ s: string }[]>`select transcription_status as s from human_handoffs where id = ${id}`)[0]!.s;
    expect([await status(lost.id), await status(young.id), await status(queued.id)]).toEqual(['failed', 'pending', 'pending']);
    const [meta] = await sql<{ metadata: Record<string, unknown> }[]>`select metadata from conversations where id = ${lost.conversationId}`;
    expect(meta!.metadata).toMatchObject({ transcription_status: 'failed', transcription_error: "no recording of the person's leg arrived" });
    expect(await transcriber.abandonStale()).toBe(0);
  });

  it('an agent without an ASR fails the transcript without downloading the recording', async () => {
    const id = newId();
    await sql`insert into human_handoffs (id, workspace_id, call_id, ai_agent_id, status, offered_at, ended_at, conversation_id, transcription_status, recording_url)
              values (${id}, ${ws}, ${newId()}, ${newId()}, 'ended', now(), now(), ${newId()}, 'pending', 'https://api.example.test/rec.wav')`;
    let downloads = 0;
    const transcriber = transcriberWith({
      liveConfig: async () => ({ providers: { asr: null, llm: null, tts: null }, language: 'en' }) as never,
      fetchRecording: async () => {
        downloads++;
        return new Uint8Array();
      },
    });
    await transcriber.run({ data: { handoff_id: id }, signal: new AbortController().signal, isLastAttempt: false } as never);
    expect(downloads).toBe(0);
    const [row] = await sql<{ s: string; e: string }[]>`select transcription_status as s, transcription_error as e from human_handoffs where id = ${id}`;
    expect(row).toEqual({ s: 'failed', e: 'the agent has no published ASR provider' });
  });
});
