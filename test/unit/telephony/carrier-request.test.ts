/**
 * carrierRequest (control-plane/telephony/carriers/http.ts) reads at most
 * MAX_CARRIER_RESPONSE_BYTES of a carrier's answer: a larger one is a CarrierError, not a buffer
 * that grows with whatever the other end sends.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { carrierRequest, MAX_CARRIER_RESPONSE_BYTES } from '../../../control-plane/telephony/carriers/http.js';
import { CarrierError } from '../../../control-plane/telephony/carriers/types.js';

let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    // Received, never answered (a create the carrier may have carried out).
    if (req.url === '/silent') return;
    if (req.url === '/drop') return void req.on('end', () => req.socket.destroy());
    res.writeHead(req.url === '/error' ? 500 : 200, { 'content-type': 'application/json' });
    if (req.url === '/small') return res.end('{"sid":"CA1"}');
    // A JSON string that never closes, streamed past the bound.
    res.write('{"sid":"');
    const chunk = 'x'.repeat(64 * 1024);
    let sent = 0;
    const pump = () => {
      while (sent < MAX_CARRIER_RESPONSE_BYTES * 2 && !res.destroyed) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end('"}');
    };
    res.on('error', () => undefined);
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('carrierRequest', () => {
  it('tells a request that never left (connection refused) from one the carrier may have acted on', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refused = await carrierRequest({ url: `http://127.0.0.1:${port}/x`, auth: { bearer: 'k' } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CarrierError);
    expect(refused).toMatchObject({ status: 0, outcomeUnknown: false });
    const silent = await carrierRequest({ url: `${base}/silent`, auth: { bearer: 'k' }, body: { a: 1 }, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(silent).toMatchObject({ status: 0, outcomeUnknown: true, message: 'the carrier did not answer within 300 ms' });
    const dropped = await carrierRequest({ url: `${base}/drop`, auth: { bearer: 'k' }, body: { a: 1 } }).catch((e: unknown) => e);
    expect(dropped).toMatchObject({ status: 0, outcomeUnknown: true });
  });

  it('parses a normal answer', async () => {
    expect(await carrierRequest({ url: `${base}/small`, auth: { bearer: 'k' } })).toEqual({ sid: 'CA1' });
  });

  it('refuses an answer over the bound with a 502 CarrierError', async () => {
    await expect(carrierRequest({ url: `${base}/big`, auth: { bearer: 'k' } })).rejects.toMatchObject({ status: 502, message: expect.stringContaining(`larger than ${MAX_CARRIER_RESPONSE_BYTES} bytes`) });
  });

  it('an oversized error answer keeps the carrier status', async () => {
    await expect(carrierRequest({ url: `${base}/error`, auth: { bearer: 'k' } })).rejects.toMatchObject({ status: 500 });
  });
});
