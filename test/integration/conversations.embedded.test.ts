/**
 * Zero-config mode (the embedded PostgreSQL, no Redis): the writer's SQL and the folded list run on
 * the embedded database, and live turns travel on one in-process bus shared by writer and domain.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTranscriptBus, type TranscriptEvent } from '../../shared/records/bus.js';
import { createConversationWriter } from '../../media-engine/records/writer.js';
import { api, createTestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { createAgent, startConversationsServer, type Harness } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

let dataDir: string;
let infra: TestInfra | undefined;
let h: Harness | undefined;
const bus = createMemoryTranscriptBus();

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'vp-conv-embedded-'));
  infra = await startTestInfra({ dataDir }, { DATABASE_URL: '', REDIS_URL: '' });
  h = await startConversationsServer(infra, { bus });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await bus.close();
  await infra?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}, 30_000);

describe('conversations on the embedded database', () => {
  it('records a call and lists it; the in-process bus carries its turns', { timeout: 60_000 }, async () => {
    expect(infra!.embeddedDb).toBe(true);
    const u = await createTestUser(h!);
    const agent = await createAgent(h!, infra!, u, u.workspaceId);
    const writer = createConversationWriter({ sql: infra!.sql, logger: infra!.logger, clock: infra!.clock, bus });
    const sc = sessionConfig({ agent_id: agent, workspace_id: u.workspaceId });
    const rec = writer.recorderFor(sc);
    const got: TranscriptEvent[] = [];
    await bus.subscribe(rec.conversationId, (e) => got.push(e));
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: u.workspaceId, metadata: {}, started_at_ms: t0 });
    rec.turn(turnRecord(1, { tool: true, startedAtMs: t0 }));
    rec.end(endRecord(1, t0));
    await writer.close();
    expect(got.map((e) => e.type)).toEqual(['start', 'turn', 'end']);
    const list = await api(h!, 'GET', '/api/v1/conversations', { token: u.token });
    expect(list.body.meta.total).toBe(1);
    expect(list.body.data[0]).toMatchObject({ id: rec.conversationId, status: 'completed', total_turns: 1 });
    const d = await api(h!, 'GET', `/api/v1/conversations/${rec.conversationId}`, { token: u.token });
    expect(d.body.data.messages).toHaveLength(2);
    expect(d.body.data.tool_calls).toHaveLength(1);
  });
});
