/**
 * Base of the connector vendor fakes (HubSpot, Zendesk, Stripe, Cal.com): a real HTTP server
 * with the shared fault injection (slow first byte for timeouts, 429 with Retry-After, 500),
 * credentials the test can revoke (a 401 exactly like an expired or revoked key), and the
 * vendor's own error body shape for each of those answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { delay } from './faults.js';
import { HttpFake, type HttpRecord } from './http-fake.js';

export abstract class VendorFake extends HttpFake {
  /** Credentials the vendor accepts (bearer token, or `user:password` for Basic). */
  readonly validKeys = new Set<string>();

  revoke(key: string): void {
    this.validKeys.delete(key);
  }

  /** The vendor's error body for `status` (its own field names). */
  protected abstract errorBody(status: number, message: string): unknown;
  /** The request's credential as the vendor reads it; undefined when none was sent. */
  protected abstract credentialOf(rec: HttpRecord): string | undefined;
  protected abstract route(rec: HttpRecord, res: ServerResponse): void;

  protected fail(rec: HttpRecord, res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    this.sendJson(rec, res, status, this.errorBody(status, message), headers);
  }

  protected async handle(rec: HttpRecord, _req: IncomingMessage, res: ServerResponse): Promise<void> {
    const f = rec.faults;
    if (f.slowFirstByteMs) await delay(f.slowFirstByteMs);
    if (res.destroyed) return;
    if (f.status429RetryAfterS !== undefined) return this.fail(rec, res, 429, 'rate limit exceeded', { 'retry-after': String(f.status429RetryAfterS) });
    if (f.status500) return this.fail(rec, res, 500, 'internal server error');
    const cred = this.credentialOf(rec);
    if (cred === undefined || !this.validKeys.has(cred)) return this.fail(rec, res, 401, this.unauthorizedMessage());
    if (f.unexpectedBody !== undefined) return this.sendJson(rec, res, 200, f.unexpectedBody);
    this.route(rec, res);
  }

  protected unauthorizedMessage(): string {
    return 'invalid credentials';
  }

  protected bearer(rec: HttpRecord): string | undefined {
    const h = rec.headers.authorization;
    return h?.startsWith('Bearer ') ? h.slice('Bearer '.length) : undefined;
  }

  protected basic(rec: HttpRecord): string | undefined {
    const h = rec.headers.authorization;
    return h?.startsWith('Basic ') ? Buffer.from(h.slice('Basic '.length), 'base64').toString('utf8') : undefined;
  }
}
