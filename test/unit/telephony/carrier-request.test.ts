/**
 * carrierRequest (control-plane/telephony/carriers/http.ts) reads at most
 * MAX_CARRIER_RESPONSE_BYTES of a carrier's answer: a larger one is a CarrierError, not a buffer
 * that grows with whatever the other end sends.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { carrierRequest, MAX_CARRIER_RESPONSE_BYTES } from '../../../control-plane/telephony/carriers/http.js';

let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
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
