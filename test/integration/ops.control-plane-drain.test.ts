/**
 * Issue 23, a control plane on SIGTERM (`RunningServer.close({graceMs})`, what `run.ts` does): it
 * stops accepting connections at once, but a request already in flight (here one whose body is
 * still arriving) is answered instead of being cut; without a grace period it is cut (the
 * behaviour a SIGINT keeps). `/ready` fails for the whole drain, `/live` does not.
 */
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { until } from '../helpers/campaigns.js';

let infra: TestInfra;
let cp: ControlPlane;

beforeEach(async () => {
  infra = await startTestInfra();
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
}, 30_000);

afterEach(async () => {
  await cp?.close();
  await infra?.close();
});

/** A login whose body is sent in two parts: the request is in flight between them. Resolves with the raw answer. */
function slowLogin(port: number): { sendRest(): void; answer: Promise<string>; started: Promise<void> } {
  const body = JSON.stringify({ email: 'nobody@example.com', password: 'not-the-password-1' });
  const sock = net.connect(port, '127.0.0.1');
  let rest = () => {};
  const started = new Promise<void>((resolve) => {
    sock.once('connect', () => {
      sock.write(`POST /api/v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
      rest = () => sock.write(body.slice(10));
      // In flight once the server parsed the headers and dispatched it.
      until(() => cp.server.inFlight?.() === 1, 5000, 'request in flight').then(resolve, resolve);
    });
  });
  const answer = new Promise<string>((resolve) => {
    let got = '';
    sock.on('data', (d) => (got += String(d)));
    sock.on('close', () => resolve(got));
    sock.on('error', () => {});
  });
  return { sendRest: () => rest(), answer, started };
}

describe('control plane drain', () => {
  it('answers a request in flight at SIGTERM, and refuses new connections', async () => {
    const req = slowLogin(cp.port);
    await req.started;
    const closing = cp.close({ graceMs: 10_000 });
    // New connections are refused from now on.
    await expect(
      new Promise((resolve, reject) => {
        const s = net.connect(cp.port, '127.0.0.1');
        s.once('connect', () => (s.destroy(), resolve('connected')));
        s.once('error', reject);
      }),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    req.sendRest();
    const answer = await req.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    await closing;
  });

  it('/ready answers 503 from the drain notice on, /live stays 200', async () => {
    const get = (path: string) => fetch(`http://127.0.0.1:${cp.port}${path}`);
    expect((await get('/ready')).status).toBe(200);
    cp.markDraining();
    const ready = await get('/ready');
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('1');
    expect(((await ready.json()) as { error: { message: string } }).error.message).toMatch(/draining/);
    expect((await get('/live')).status).toBe(200);
  });

  it('without a grace period cuts it (SIGINT)', async () => {
    const req = slowLogin(cp.port);
    await req.started;
    await cp.close();
    req.sendRest();
    expect(await req.answer).toBe('');
  });
});
