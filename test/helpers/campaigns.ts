/**
 * Campaign test helpers: a multipart CSV upload (the route is a raw handler, not JSON) and a raw
 * GET for the CSV export, both over plain http from a random loopback source (like `api`).
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { randomLoopback, type ApiResponse } from './accounts.js';
import { expect } from 'vitest';

export function multipart(field: string, filename: string, content: Buffer): { body: Buffer; contentType: string } {
  const boundary = `----vp${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { body: Buffer.concat([head, content, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

function request(port: number, method: string, path: string, token: string, body?: Buffer, contentType?: string): Promise<ApiResponse & { text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (contentType) headers['content-type'] = contentType;
    if (body) headers['content-length'] = String(body.length);
    const req = http.request({ method, hostname: '127.0.0.1', port, path, headers, localAddress: randomLoopback(), agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // CSV or empty
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, text });
      });
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** POST /campaigns/{id}/csv-upload with `content` in the multipart field `field` (default `file`). */
export function uploadCsv(port: number, token: string, campaignId: string, content: string | Buffer, field = 'file') {
  const m = multipart(field, 'contacts.csv', Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8'));
  return request(port, 'POST', `/api/v1/campaigns/${campaignId}/csv-upload`, token, m.body, m.contentType);
}

/** POST /campaigns/{id}/csv-upload with two file parts, both named `file`. */
export function uploadTwoFiles(port: number, token: string, campaignId: string, first: string, second: string) {
  const boundary = `----vp${randomBytes(8).toString('hex')}`;
  const part = (content: string) => `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.csv"\r\nContent-Type: text/csv\r\n\r\n${content}\r\n`;
  const body = Buffer.from(`${part(first)}${part(second)}--${boundary}--\r\n`);
  return request(port, 'POST', `/api/v1/campaigns/${campaignId}/csv-upload`, token, body, `multipart/form-data; boundary=${boundary}`);
}

export function exportCsv(port: number, token: string, campaignId: string) {
  return request(port, 'GET', `/api/v1/campaigns/${campaignId}/export`, token);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `pred` every `intervalMs` (default 25); throws naming `what` after `timeoutMs`. */
export async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string, intervalMs = 25): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await sleep(intervalMs);
  }
}

/**
 * After a disruption (a killed replica, a database restart) every contact of a failed-outcome
 * campaign with max_retries 1 ended `failed` after exactly 2 counted attempts, the carrier saw each
 * attempt at most once (an attempt claimed but not handed to the carrier when the disruption hit
 * counts without a dial; it is never repeated under the same attempt number), and at most
 * `maxUndialed` contacts (the dials in flight at the disruption) lost a carrier call.
 */
export function expectEachAttemptDialedAtMostOnce(rows: Array<Record<string, any>>, dialedNumbers: string[], maxUndialed: number): void {
  const perNumber = new Map<string, number>();
  for (const to of dialedNumbers) perNumber.set(to, (perNumber.get(to) ?? 0) + 1);
  for (const r of rows) {
    expect([r.to_number, r.status, r.attempts]).toEqual([r.to_number, 'failed', 2]);
    const seen = perNumber.get(r.to_number) ?? 0;
    expect(seen, r.to_number).toBeLessThanOrEqual(2);
    expect(seen, r.to_number).toBeGreaterThanOrEqual(1);
  }
  expect(rows.filter((r) => (perNumber.get(r.to_number) ?? 0) < 2).length).toBeLessThanOrEqual(maxUndialed);
}
