/** The `error` a webhook attempt records when the request fails (control-plane/webhooks/deliver.ts). */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorText } from '../../../control-plane/webhooks/deliver.js';
import { createOutboundClient } from '../../../shared/outbound/client.js';

let server: net.Server;
let port = 0;

beforeAll(async () => {
  // A receiver that answers a POST with a bare 101 (no Upgrade header): undici asserts on it.
  server = net.createServer((s) => s.once('data', () => s.end('HTTP/1.1 101 Switching Protocols\r\n\r\n')));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('webhook attempt errors', () => {
  it("an answer undici cannot take is described, not undici's internal assertion", async () => {
    const client = createOutboundClient({ allowCidrs: ['127.0.0.1/32'] });
    const err = await client.fetch(`http://127.0.0.1:${port}/hook`, { method: 'POST', body: '{}' }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeDefined();
    const text = errorText(err);
    expect(text).not.toMatch(/assert/i);
    expect(text).toMatch(/not an HTTP response to a POST/);
  });

  it('connection failures keep their cause code', () => {
    const err = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' } });
    expect(errorText(err)).toBe('fetch failed (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1)');
  });
});
