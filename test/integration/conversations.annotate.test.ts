/**
 * Carrier facts (final status, AMD verdict, recording link) are merged into the call's
 * conversation by session id. A session id is unique per workspace only (migration 0024), so the
 * annotator must match the call's workspace too: another tenant's row carrying the same session id
 * never receives this call's facts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnnotator } from '../../control-plane/conversations/annotate.js';
import { newId } from '../../shared/ids.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

let infra: TestInfra;

beforeAll(async () => {
  infra = await startTestInfra();
});

afterAll(async () => {
  await infra?.close();
});

async function conversationIn(workspaceId: string, sessionId: string): Promise<string> {
  const id = newId();
  await infra.sql`insert into conversations (id, session_id, agent_id, workspace_id) values (${id}, ${sessionId}, ${newId()}, ${workspaceId})`;
  return id;
}

async function metadataOf(id: string): Promise<Record<string, unknown>> {
  const [row] = await infra.sql<{ metadata: Record<string, unknown> }[]>`select metadata from conversations where id = ${id}`;
  return row.metadata;
}

describe('call annotations', () => {
  it("land on the call's workspace's conversation only, when two workspaces share a session id", async () => {
    const sessionId = newId();
    const callWs = newId();
    const ours = await conversationIn(callWs, sessionId);
    const theirs = await conversationIn(newId(), sessionId);
    const annotator = createAnnotator({ sql: infra.sql, clock: infra.clock, logger: infra.logger, retries: 0 });
    try {
      annotator.annotate({ session_id: sessionId, workspace_id: callWs }, { recording_url: 'https://carrier.example/rec/1' });
      const deadline = Date.now() + 5000;
      while (!(await metadataOf(ours)).recording_url && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await metadataOf(ours)).toEqual({ recording_url: 'https://carrier.example/rec/1' });
      expect(await metadataOf(theirs)).toEqual({});
    } finally {
      annotator.close();
    }
  });
});
