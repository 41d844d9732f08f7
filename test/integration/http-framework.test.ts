import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import { createHealthService } from '../../control-plane/health/service.js';
import { healthRoutes } from '../../control-plane/health/routes.js';
import { startControlPlaneServer, type RunningServer } from '../../control-plane/http/server.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { grpcClient } from '../helpers/grpc.js';

let infra: TestInfra;
let server: RunningServer;
let base: string;

beforeAll(async () => {
  infra = await startTestInfra();
  server = await startControlPlaneServer({
    port: 0,
    host: '127.0.0.1',
    logger: infra.logger,
    maxBodyBytes: 1024,
    services: [{ service: HealthService, impl: createHealthService(infra) }],
    routes: healthRoutes,
  });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  await server?.close();
  await infra?.close();
});

describe('one port serves REST, Connect and gRPC', () => {
  it('REST health routes answer raw JSON with a request id', async () => {
    for (const p of ['/healthz', '/live', '/ready', '/api/v1/providers/health', '/api/v1/providers/healthz', '/api/v1/providers/live', '/api/v1/providers/ready']) {
      const res = await fetch(base + p);
      expect(res.status, p).toBe(200);
      expect(res.headers.get('x-request-id')).toBeTruthy();
      expect(((await res.json()) as { status: string }).status).toBe("ok");
    }
  });

  it('unknown routes are 404 in the family shape', async () => {
    const env = await fetch(`${base}/api/v1/nope`);
    expect(env.status).toBe(404);
    const body = (await env.json()) as { timestamp: unknown };
    expect(body).toMatchObject({ success: false, data: null, error: { code: 'NOT_FOUND' } });
    expect(typeof body.timestamp).toBe('string');
    const raw = await fetch(`${base}/api/v1/telephony/nope`);
    expect(raw.status).toBe(404);
    expect(await raw.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
    const detail = await fetch(`${base}/api/v1/connectors/nope`);
    expect(await detail.json()).toEqual({ detail: expect.any(String) });
  });

  it('wrong method on a known path is 405', async () => {
    const res = await fetch(`${base}/healthz`, { method: 'DELETE' });
    expect(res.status).toBe(405);
  });

  it('Connect JSON over HTTP/1.1 (curl-style)', async () => {
    const res = await fetch(`${base}/voiceplane.v1.HealthService/Live`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok' });
  });

  it('Connect client over HTTP/2 and the gRPC transport', async () => {
    const c1 = createClient(HealthService, createConnectTransport({ baseUrl: base, httpVersion: '2' }));
    expect((await c1.ready({})).checks.database).toBe('ok');
    const c2 = createClient(HealthService, createGrpcTransport({ baseUrl: base }));
    expect((await c2.live({})).status).toBe('ok');
  });

  it('a real @grpc/grpc-js client', async () => {
    const g = grpcClient(server.port, 'HealthService', 'voiceplane/v1/health.proto');
    try {
      const res = await g.call('Ready', {});
      expect(res).toMatchObject({ status: 'ok', checks: { database: 'ok', registry: 'ok' } });
    } finally {
      g.close();
    }
  });

  it('Connect read limit rejects oversized bodies', async () => {
    const res = await fetch(`${base}/voiceplane.v1.HealthService/Live`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(5000) }),
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
  });
});

describe('a client that pipelines requests and hangs up', () => {
  it('leaves no request in flight, so a graceful close does not wait out its grace', async () => {
    const own = await startControlPlaneServer({ port: 0, host: '127.0.0.1', logger: infra.logger, maxBodyBytes: 1024, services: [{ service: HealthService, impl: createHealthService(infra) }], routes: healthRoutes });
    // /ready reads the database, so the first answer is still pending when the next two are parsed.
    const ready = 'GET /ready HTTP/1.1\r\nHost: x\r\n\r\n';
    const sockets = await Promise.all(
      Array.from({ length: 10 }, () => new Promise<net.Socket>((resolve) => {
        const s = net.connect(own.port, '127.0.0.1', () => s.write(ready + ready + ready, () => resolve(s)));
        s.on('error', () => undefined);
      })),
    );
    await vi.waitFor(() => expect(own.inFlight!()).toBeGreaterThan(0), { timeout: 5000, interval: 5 });
    for (const s of sockets) s.destroy();
    await vi.waitFor(() => expect(own.inFlight!()).toBe(0), { timeout: 5000, interval: 20 });
    const t0 = performance.now();
    await own.close({ graceMs: 10_000 });
    expect(performance.now() - t0).toBeLessThan(2000);
  }, 20_000);
});
