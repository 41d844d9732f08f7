/**
 * The GRPC_PORT listener (control-plane/http/grpc-native.ts, ADR 0004) with a real @grpc/grpc-js
 * client: the same ServiceImpls as the one-port listener, so answers, auth, API-key scopes and
 * error mapping (code, message, ErrorDetail in grpc-status-details-bin) must match it exactly.
 */
import http2 from 'node:http2';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { startGrpcNativeServer } from '../../control-plane/http/grpc-native.js';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import { ErrorDetailSchema } from '../../shared/gen/voiceplane/v1/common_pb.js';
import { grpcClient } from '../helpers/grpc.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { createTestUser, restClient, type Call, type TestUser } from '../unit/agents/support.js';

let infra: TestInfra;
let app: ControlPlane;
let call: Call;
let owner: TestUser;
let agentId = '';
let readKey = '';
let native: ReturnType<typeof grpcClient>;
let onePort: ReturnType<typeof grpcClient>;
let health: ReturnType<typeof grpcClient>;

async function rpcError(client: ReturnType<typeof grpcClient>, method: string, req: unknown, token?: string): Promise<ServiceError> {
  try {
    await client.call(method, req, token);
  } catch (e) {
    return e as ServiceError;
  }
  throw new Error(`${method} succeeded unexpectedly`);
}

/** The stable envelope code carried in grpc-status-details-bin, decoded as a Connect client would. */
function detailCode(err: ServiceError): string | undefined {
  const bin = err.metadata.get('grpc-status-details-bin')[0];
  if (!(bin instanceof Buffer)) return undefined;
  const trailer = new Headers({ 'grpc-status': String(err.code), 'grpc-message': encodeURIComponent(err.details), 'grpc-status-details-bin': bin.toString('base64') });
  return findTrailerError(trailer)?.findDetails(ErrorDetailSchema)[0]?.code;
}

beforeAll(async () => {
  // grpcPort 0 through the config, as GRPC_PORT=0 would: an ephemeral port.
  infra = await startTestInfra({ grpcPort: 0, maxBodyBytes: 8192 });
  app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  call = restClient(app);
  owner = await createTestUser(app);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Native gRPC' })).body.data.id;
  const key = await call('POST', '/auth/api-keys', owner.token, { name: 'read-only', scopes: ['agents:read'] });
  if (key.status !== 201) throw new Error(`api key: ${key.status} ${JSON.stringify(key.body)}`);
  readKey = key.body.data.key;
  native = grpcClient(app.grpcPort!, 'AgentService', 'voiceplane/v1/agents.proto');
  onePort = grpcClient(app.port, 'AgentService', 'voiceplane/v1/agents.proto');
  health = grpcClient(app.grpcPort!, 'HealthService', 'voiceplane/v1/health.proto');
});

afterAll(async () => {
  native?.close();
  onePort?.close();
  health?.close();
  await app?.close();
  await infra?.close();
});

describe('gRPC on GRPC_PORT (grpc-js server)', () => {
  it('listens on its own port and answers exactly what the one-port listener answers', async () => {
    expect(app.grpcPort).toBeGreaterThan(0);
    expect(app.grpcPort).not.toBe(app.port);
    const a = await native.call<{ agent: Record<string, unknown> }>('GetAgent', { id: agentId }, owner.token);
    expect(a.agent).toMatchObject({ id: agentId, name: 'Native gRPC', workspace_id: owner.workspaceId });
    expect(a).toEqual(await onePort.call('GetAgent', { id: agentId }, owner.token));
    expect(await health.call('Live', {})).toEqual(await grpcClient(app.port, 'HealthService', 'voiceplane/v1/health.proto').call('Live', {}));
  });

  it('writes go through the same implementation (visible over REST)', async () => {
    const a = await native.call<Record<string, unknown>>('CreateAgent', { workspace_id: owner.workspaceId, name: 'Made over grpc-js' }, owner.token);
    const rest = await call('GET', `/agents/${a.id as string}`, owner.token);
    expect(rest.status).toBe(200);
    expect(JSON.stringify(rest.body.data)).toContain('"name":"Made over grpc-js"');
  });

  it('no credentials: UNAUTHENTICATED with the envelope code, as on the one-port listener', async () => {
    const e = await rpcError(native, 'GetAgent', { id: agentId });
    expect(e.code).toBe(GrpcStatus.UNAUTHENTICATED);
    const same = await rpcError(onePort, 'GetAgent', { id: agentId });
    expect([e.code, e.details, detailCode(e)]).toEqual([same.code, same.details, detailCode(same)]);
    expect(detailCode(e)).toBe('UNAUTHORIZED');
  });

  it('an API key scoped agents:read reads, and is refused a write with PERMISSION_DENIED', async () => {
    expect((await native.call<{ agent: { id: string } }>('GetAgent', { id: agentId }, readKey)).agent.id).toBe(agentId);
    const e = await rpcError(native, 'CreateAgent', { workspace_id: owner.workspaceId, name: 'nope' }, readKey);
    expect(e.code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(detailCode(e)).toBe('FORBIDDEN');
    const same = await rpcError(onePort, 'CreateAgent', { workspace_id: owner.workspaceId, name: 'nope' }, readKey);
    // Both listeners send grpc-message with gRPC's own percent-encoding: a grpc-js client (decodeURI)
    // reads ':' and ',' as they are (Connect's encodeURIComponent sent %3A; patches/README.md).
    expect(e.details).toBe('this API key lacks the agents:write scope');
    expect([e.code, e.details]).toEqual([same.code, same.details]);
  });

  it('an unknown agent is NOT_FOUND; bad input is INVALID_ARGUMENT naming the field', async () => {
    const nf = await rpcError(native, 'GetAgent', { id: '01890000-0000-7000-8000-000000000000' }, owner.token);
    expect(nf.code).toBe(GrpcStatus.NOT_FOUND);
    expect(detailCode(nf)).toBe('NOT_FOUND');
    const bad = await rpcError(native, 'ListAgents', { limit: 0 }, owner.token);
    const sameBad = await rpcError(onePort, 'ListAgents', { limit: 0 }, owner.token);
    expect(bad.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(bad.details).toContain('limit');
    expect([bad.details, detailCode(bad)]).toEqual([sameBad.details, detailCode(sameBad)]);
    expect(sameBad.details).toMatch(/^limit: /);
  });

  it('bytes that are not the request message are INVALID_ARGUMENT on both listeners (they were INTERNAL)', async () => {
    // Field 1 (id) as a length-delimited string claiming 100 bytes, with 3 present: truncated.
    const garbage = Buffer.from([0x0a, 0x64, 0x61, 0x62, 0x63]);
    for (const client of [native, onePort]) {
      const md = new Metadata();
      md.set('authorization', `Bearer ${owner.token}`);
      const err = await new Promise<ServiceError>((resolve, reject) =>
        client.client.makeUnaryRequest('/voiceplane.v1.AgentService/GetAgent', (b: Buffer) => b, (b: Buffer) => b, garbage, md, { deadline: Date.now() + 5000 }, (e) => (e ? resolve(e) : reject(new Error('answered')))),
      );
      expect(err.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    }
    // The connection stays usable.
    expect(await native.call<{ agent: { id: string } }>('GetAgent', { id: agentId }, owner.token)).toMatchObject({ agent: { id: agentId } });
  });

  it('a request message above MAX_BODY_BYTES is refused with RESOURCE_EXHAUSTED before any handler runs', async () => {
    const e = await rpcError(native, 'CreateAgent', { workspace_id: owner.workspaceId, name: 'Big', system_prompt: 'x'.repeat(9000) }, owner.token);
    expect(e.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    const list = await call('GET', `/agents?workspace_id=${owner.workspaceId}`, owner.token);
    expect(JSON.stringify(list.body)).not.toContain('"name":"Big"');
  });

  it('per-IP limits count the address, not the connection: fresh channels still hit the login limit', { timeout: 20_000 }, async () => {
    // 30 logins per IP per minute (docs/accounts.md). Each attempt on a new channel (a new source
    // port) with a new email, so only the per-IP bucket can refuse. 70 attempts: whichever fixed
    // window they fall in, one window sees more than 30.
    let refused = 0;
    for (let i = 0; i < 70 && refused === 0; i++) {
      const auth = grpcClient(app.grpcPort!, 'AuthService', 'voiceplane/v1/accounts.proto');
      try {
        const err = await rpcError(auth, 'Login', { email: `nobody-${i}@example.com`, password: 'wrong password 1' });
        if (err.code === GrpcStatus.RESOURCE_EXHAUSTED) refused++;
        else expect(err.code).toBe(GrpcStatus.UNAUTHENTICATED);
      } finally {
        auth.close();
      }
    }
    expect(refused).toBe(1);
  });

  it('echoes the caller request id in the response headers, and in the trailers of an error', async () => {
    const md = new Metadata();
    md.set('authorization', `Bearer ${owner.token}`);
    md.set('x-request-id', 'req-native-1');
    const headers = await new Promise<Metadata>((resolve, reject) => {
      const c = native.client.GetAgent!({ id: agentId }, md, {}, (err) => err && reject(err)) as unknown as NodeJS.EventEmitter;
      c.on('metadata', resolve);
    });
    expect(headers.get('x-request-id')).toEqual(['req-native-1']);
    const fail = new Metadata();
    fail.set('x-request-id', 'req-native-2');
    const err = await new Promise<ServiceError>((resolve) => native.client.GetAgent!({ id: agentId }, fail, {}, (e) => resolve(e!)));
    expect(err.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(err.metadata.get('x-request-id')).toEqual(['req-native-2']);
  });
});

describe('connection bounds of the GRPC_PORT listener (grpc-js has no request-body timer)', () => {
  const healthOnly = [{ service: HealthService, impl: { live: async () => ({ status: 'ok' }), ready: async () => ({ status: 'ok' }) } }] as never;

  it('a connection without calls is closed; a call whose message never arrives is cut when its connection ages out', async () => {
    const s = await startGrpcNativeServer({ port: 0, host: '127.0.0.1', logger: infra.logger, maxBodyBytes: 8192, services: healthOnly, idleMs: 300, maxAgeMs: 600, ageGraceMs: 300 });
    const sessions: http2.ClientHttp2Session[] = [];
    try {
      const idle = http2.connect(`http://127.0.0.1:${s.port}`);
      sessions.push(idle);
      const idleClosed = new Promise<number>((resolve) => idle.on('close', () => resolve(Date.now())));
      idle.on('error', () => {});
      const t0 = Date.now();
      expect((await idleClosed) - t0).toBeLessThan(5_000);

      const stalled = http2.connect(`http://127.0.0.1:${s.port}`);
      sessions.push(stalled);
      stalled.on('error', () => {});
      // Headers of a real method, then a body that never comes.
      const stream = stalled.request({ ':method': 'POST', ':path': '/voiceplane.v1.HealthService/Live', 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
      stream.on('error', () => {});
      stream.resume();
      const cut = await new Promise<number>((resolve) => stream.on('close', () => resolve(Date.now())));
      expect(cut - t0).toBeLessThan(10_000);
    } finally {
      for (const x of sessions) x.destroy();
      await s.close();
    }
  });
});
