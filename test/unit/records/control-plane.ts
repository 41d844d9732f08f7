/**
 * Control plane harness for the conversations suites: accounts + agents + conversations domains on
 * one real server (port 0), real Postgres/Redis from `startTestInfra`, a clock the test can move
 * forward (signed link expiry), and agent fixtures (REST when the agents routes answer, else SQL).
 */
import type { Clock } from '../../../shared/clock.js';
import { realClock } from '../../../shared/clock.js';
import { newId } from '../../../shared/ids.js';
import { HealthService } from '../../../shared/gen/voiceplane/v1/health_pb.js';
import { createHealthService } from '../../../control-plane/health/service.js';
import { healthRoutes } from '../../../control-plane/health/routes.js';
import { createAccountsDomain, type AccountsDomain } from '../../../control-plane/accounts/index.js';
import { createAgentsDomain } from '../../../control-plane/agents/index.js';
import { createConversationsDomain, type ConversationsDeps, type ConversationsDomain, type ConversationsOptions } from '../../../control-plane/conversations/index.js';
import type { ControlPlaneDeps, Domain } from '../../../control-plane/domain.js';
import { startControlPlaneServer, type RunningServer } from '../../../control-plane/http/server.js';
import type { TranscriptBus } from '../../../shared/records/bus.js';
import { startJobs, type Jobs } from '../../../control-plane/jobs/index.js';
import { createPostCallRelay, type PostCallRelay } from '../../../control-plane/post-call/relay.js';
import { api, type TestUser } from '../../helpers/accounts.js';
import type { TestInfra } from '../../helpers/infra.js';

/** realClock plus an offset the test can move (`advance`). */
export function offsetClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return { ...realClock, now: () => Date.now() + offset, advance: (ms) => (offset += ms) };
}

export interface Harness {
  port: number;
  accounts: AccountsDomain;
  conversations: ConversationsDomain;
  server: RunningServer;
  jobs: Jobs;
  postCall: PostCallRelay;
  close(): Promise<void>;
}

export async function startConversationsServer(
  infra: TestInfra,
  opts: { clock?: Clock; bus?: TranscriptBus; liveConfig?: ConversationsDeps['liveConfig']; llmFor?: ConversationsDeps['llmFor']; options?: ConversationsOptions } = {},
): Promise<Harness> {
  const deps: ControlPlaneDeps = { config: infra.config, logger: infra.logger, clock: opts.clock ?? infra.clock, sql: infra.sql, registry: infra.registry, secrets: infra.secrets, jwtKey: infra.jwtKey };
  // Same wiring as control-plane/app.ts: one job queue (fast polling for tests) and the post-call relay.
  const jobs = await startJobs({ sql: infra.sql, logger: infra.logger, pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'post-call.summary': { retryDelaySeconds: 1, retryBackoff: false } } });
  const postCall = await createPostCallRelay({ sql: infra.sql, logger: infra.logger, clock: deps.clock });
  const accounts = await createAccountsDomain(deps);
  const agents = createAgentsDomain({ ...deps, auth: accounts.auth });
  const conversations = await createConversationsDomain(
    { ...deps, auth: accounts.auth, bus: opts.bus, liveConfig: opts.liveConfig ?? agents.liveConfig, llmFor: opts.llmFor, jobs },
    { busPrefix: infra.registryPrefix, ...opts.options },
  );
  const health: Domain = { services: [{ service: HealthService, impl: createHealthService(deps) }], routes: healthRoutes };
  const domains: Domain[] = [health, accounts, agents, conversations];
  const server = await startControlPlaneServer({
    port: 0,
    host: '127.0.0.1',
    logger: infra.logger,
    maxBodyBytes: infra.config.maxBodyBytes,
    services: domains.flatMap((d) => d.services),
    routes: domains.flatMap((d) => d.routes),
    rawHandlers: domains.flatMap((d) => d.rawHandlers ?? []),
  });
  postCall.on((ev, tx) => conversations.summarizer.enqueue(ev.conversation_id, tx));
  await postCall.start();
  return {
    port: server.port,
    accounts,
    conversations,
    server,
    jobs,
    postCall,
    async close() {
      await server.close();
      await postCall.close();
      for (const d of domains.reverse()) await d.close?.();
      await jobs.close();
    },
  };
}

/** An agent in `workspaceId`: through `POST /api/v1/agents` when it works, else a direct row. */
export async function createAgent(h: Harness, infra: TestInfra, user: TestUser, workspaceId: string, name = 'Agent'): Promise<string> {
  const res = await api(h, 'POST', '/api/v1/agents', { token: user.token, body: { workspace_id: workspaceId, name } });
  if (res.status === 201 && res.body?.data?.id) return res.body.data.id as string;
  const id = newId();
  await infra.sql`insert into agents (id, workspace_id, user_id, name) values (${id}, ${workspaceId}, ${user.userId}, ${name})`;
  return id;
}
