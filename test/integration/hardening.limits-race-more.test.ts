/**
 * The count limits added after migration 0004 (QA rubrics per workspace, analysis schemas and
 * simulation test cases per agent) raced like the first ones did: an outside audit stored 102-106
 * rubrics (limit 100) and 22-25 schemas (limit 20) with parallel creates, because the services
 * counted and then inserted. Migration 0023 puts them under the database's row-limit trigger, so
 * parallel creates store exactly the limit and the rest answer 409 LIMIT_REACHED. Counts are read
 * back from Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { countRows, expectSplit, parallel } from '../helpers/limits-race.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { createAgent } from '../unit/records/control-plane.js';

let infra: TestInfra;
let cp: ControlPlane;
let owner: TestUser;

beforeAll(async () => {
  infra = await startTestInfra();
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  owner = await createTestUser(cp);
});

afterAll(async () => {
  await cp?.close();
  await infra?.close();
});

const count = (table: string, column: string, id: string) => countRows(infra.sql, table, column, id);

describe('count limits under parallel creates', () => {
  it('130 parallel QA rubric creates (limit 100 per workspace): exactly 100 stored', { timeout: 60_000 }, async () => {
    const body = (i: number) => ({ workspace_id: owner.workspaceId, name: `rubric ${i}`, criteria: [{ name: 'Polite', weight: 1 }], pass_threshold: 5 });
    const res = await parallel(130, (i) => api(cp, 'POST', '/api/v1/qa/rubrics', { token: owner.token, body: body(i) }));
    expectSplit(res, 201, 100);
    expect(await count('qa_rubrics', 'workspace_id', owner.workspaceId)).toBe(100);
  });

  it('40 parallel analysis schema creates (limit 20 per agent): exactly 20 stored', { timeout: 60_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Schemas');
    const body = (i: number) => ({ agent_id: agentId, name: `schema ${i}`, fields: [{ name: 'topic', type: 'string' }] });
    const res = await parallel(40, (i) => api(cp, 'POST', '/api/v1/conversations/analysis/schemas', { token: owner.token, body: body(i) }));
    expectSplit(res, 201, 20);
    expect(await count('analysis_schemas', 'agent_id', agentId)).toBe(20);
  });

  it('230 parallel test case creates (limit 200 per agent): exactly 200 stored', { timeout: 60_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Cases');
    const body = (i: number) => ({ name: `case ${i}`, goal: 'book a table', assertions: ['the agent confirms the booking'] });
    const res = await parallel(230, (i) => api(cp, 'POST', `/api/v1/agents/${agentId}/test-cases`, { token: owner.token, body: body(i) }));
    expectSplit(res, 201, 200);
    expect(await count('test_cases', 'agent_id', agentId)).toBe(200);
  });
});
