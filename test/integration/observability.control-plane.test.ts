/**
 * The control plane's `/metrics` against the real wiring (Postgres, Redis, both gRPC listeners):
 * the bearer token is enforced, request durations are labelled by route template (never by the
 * ids in the path) and RPC code, and the job queue's depth is counted from the database.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { grpcClient } from '../helpers/grpc.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { createTestUser, restClient, type Call, type TestUser } from '../unit/agents/support.js';
import { metricsScraper, sample } from '../helpers/metrics-scrape.js';

const TOKEN = 'cp-metrics-token-0123456789';
let infra: TestInfra;
let app: ControlPlane;
let call: Call;
let owner: TestUser;

beforeAll(async () => {
  infra = await startTestInfra({ grpcPort: 0 }, { METRICS_TOKEN: TOKEN });
  app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  call = restClient(app);
  owner = await createTestUser(app);
});

afterAll(async () => {
  await app?.close();
  await infra?.close();
});

const { scrape, metrics } = metricsScraper(() => app.port, TOKEN);

describe('control plane /metrics', () => {
  it('requires the bearer token', async () => {
    const none = await scrape();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    expect((await scrape('Bearer not-the-token-0123456789')).status).toBe(401);
    expect((await scrape(`Basic ${TOKEN}`)).status).toBe(401);
  });

  it('labels REST requests by route template and RPCs by method and code', async () => {
    const agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Metered' })).body.data.id as string;
    const missing = randomUUID();
    expect((await call('GET', `/agents/${agentId}`, owner.token)).status).toBe(200);
    expect((await call('GET', `/agents/${agentId}`, owner.token)).status).toBe(200);
    expect((await call('GET', `/agents/${missing}`, owner.token)).status).toBe(404);
    expect((await call('GET', `/no-such-route/${missing}`, owner.token)).status).toBe(404);
    for (const port of [app.port, app.grpcPort!]) {
      const agents = grpcClient(port, 'AgentService', 'voiceplane/v1/agents.proto');
      try {
        await agents.call('GetAgent', { id: agentId }, owner.token);
        await expect(agents.call('GetAgent', { id: missing }, owner.token)).rejects.toThrow();
      } finally {
        agents.close();
      }
    }

    const text = await metrics();
    const rest = (route: string, code: number) => sample(text, `voiceplane_http_request_duration_seconds_count{protocol="rest",method="GET",route="${route}",code="${code}"}`);
    expect(rest('/api/v1/agents/:id', 200)).toBe(2);
    expect(rest('/api/v1/agents/:id', 404)).toBe(1);
    expect(rest('unmatched', 404)).toBe(1);
    const rpc = (code: string) => sample(text, `voiceplane_http_request_duration_seconds_count{protocol="grpc",method="POST",route="/voiceplane.v1.AgentService/GetAgent",code="${code}"}`);
    // One each over the one-port listener and over grpc-js (GRPC_PORT).
    expect(rpc('ok')).toBe(2);
    expect(rpc('not_found')).toBe(2);
    // Ids never become label values.
    expect(text).not.toContain(agentId);
    expect(text).not.toContain(missing);
    expect(text).toMatch(/^voiceplane_process_nodejs_eventloop_lag_seconds /m);
  });

  it('counts queued jobs from the database', async () => {
    const key = randomUUID();
    const before = sample(await metrics(), 'voiceplane_jobs{queue="qa.score",state="created"}') ?? 0;
    // An hour from now: no worker takes it during the test.
    expect(await app.jobs.enqueue('qa.score', { conversation_id: key }, { singletonKey: key, delaySeconds: 3600 })).not.toBeNull();
    const text = await metrics();
    expect(sample(text, 'voiceplane_jobs{queue="qa.score",state="created"}')).toBe(before + 1);
    expect(sample(text, 'voiceplane_jobs_sample_errors_total')).toBe(0);
  });
});
