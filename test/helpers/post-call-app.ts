/**
 * The control plane with fast job polling and a conversation writer, for the post-call suites
 * that drive an LLM fake (analysis.openai, qa.openai); and an agent whose published LLM is an
 * `openai_compatible` provider pointed at that fake (loopback allowed by OUTBOUND_ALLOW_CIDRS).
 */
import { expect } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import type { OpenAiFake } from '../fakes/openai.js';
import { api, createTestUser, type TestUser } from './accounts.js';
import { startTestInfra, type TestInfra } from './infra.js';
import { createAgent } from '../unit/records/control-plane.js';

export interface PostCallApp {
  infra: TestInfra;
  cp: ControlPlane;
  alice: TestUser;
  writer: ConversationWriter;
  close(): Promise<void>;
}

export async function startPostCallApp(): Promise<PostCallApp> {
  const infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'] });
  const cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, postCallSweepMs: 500 });
  const alice = await createTestUser(cp);
  const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
  return {
    infra,
    cp,
    alice,
    writer,
    async close() {
      await writer.close();
      await cp.close();
      await infra.close();
    },
  };
}

/** A published agent of alice's workspace whose LLM is the fake. */
export async function agentOnFake(h: PostCallApp, fake: OpenAiFake, name: string): Promise<string> {
  const { cp, infra, alice } = h;
  const id = await createAgent(cp as never, infra, alice, alice.workspaceId, name);
  const llm = { provider_type: 'llm', provider_name: 'openai_compatible', api_key: fake.apiKey, base_url: `${fake.url}/v1`, model_name: 'local-model' };
  const prov = await api(cp, 'POST', `/api/v1/agents/${id}/providers`, { token: alice.token, body: llm });
  expect(prov.status, JSON.stringify(prov.body)).toBeLessThan(300);
  expect((await api(cp, 'POST', `/api/v1/agents/${id}/versions/publish`, { token: alice.token })).status).toBeLessThan(300);
  return id;
}
