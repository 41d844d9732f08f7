import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endQueuedAnswers, endThisTurn } from '../../../control-plane/http/end-batch.js';

/**
 * Answers of one event-loop turn are ended together at its end: none is sent before the turn is
 * over, every one is sent after it, and a response that throws does not hold the others back.
 */
describe('endThisTurn', () => {
  let server: http.Server;
  let port = 0;
  // What each request's handler saw right after queueing its answer, and the order of sends.
  const endedAtOnce: boolean[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.url === '/broken') {
        // A response whose end throws (a bug elsewhere): its socket is closed, the turn goes on.
        res.end = () => {
          throw new Error('broken response');
        };
      }
      endThisTurn(res, `answer to ${req.url}`);
      endedAtOnce.push(res.writableEnded);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  const get = (path: string): Promise<string> =>
    new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve(text));
          res.on('error', reject);
        })
        .on('error', reject);
    });

  it('sends each answer after the turn that made it, to its own client', async () => {
    const paths = Array.from({ length: 20 }, (_, i) => `/r${i}`);
    const bodies = await Promise.all(paths.map(get));
    expect(bodies).toEqual(paths.map((p) => `answer to ${p}`));
    expect(endedAtOnce.length).toBeGreaterThanOrEqual(20);
    expect(endedAtOnce.every((ended) => ended === false)).toBe(true);
  });

  it('ends a turn\'s answers in order; one that throws is destroyed and the rest still end', async () => {
    const events: string[] = [];
    const fake = (name: string, broken = false) =>
      ({
        end: (body: string) => {
          if (broken) throw new Error('broken response');
          events.push(`${name}: ${body}`);
        },
        destroy: () => events.push(`${name}: destroyed`),
      }) as unknown as http.ServerResponse;
    endThisTurn(fake('a'), 'one');
    endThisTurn(fake('b', true), 'two');
    endThisTurn(fake('c'), 'three');
    expect(events).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['a: one', 'b: destroyed', 'c: three']);
  });

  it('endQueuedAnswers sends the queued answers at once (a server closing without grace)', async () => {
    const ended: string[] = [];
    const fake = (name: string) => ({ end: (body: string) => ended.push(`${name}: ${body}`), destroy: () => undefined }) as unknown as http.ServerResponse;
    endThisTurn(fake('a'), 'one');
    endThisTurn(fake('b'), 'two');
    endQueuedAnswers();
    expect(ended).toEqual(['a: one', 'b: two']);
    await new Promise((r) => setImmediate(r));
    expect(ended).toEqual(['a: one', 'b: two']);
  });

  it('a response that throws on end loses only its own answer', async () => {
    const results = await Promise.allSettled([get('/a'), get('/broken'), get('/b')]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: 'answer to /a' });
    expect(results[1]!.status).toBe('rejected');
    expect(results[2]).toEqual({ status: 'fulfilled', value: 'answer to /b' });
  });
});
