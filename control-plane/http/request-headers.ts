/**
 * A read-only `Headers` view over Node's already-lowercased request headers. A web `Headers`
 * built per request (undici: one WebIDL conversion per header) was ~3 % of a cached REST GET
 * (issue 13), while handlers only ever read a few of them. Writes are refused: request headers
 * are input.
 */
import type { IncomingHttpHeaders } from 'node:http';

export class NodeRequestHeaders implements Headers {
  constructor(private readonly raw: IncomingHttpHeaders) {}

  get(name: string): string | null {
    const v = this.raw[name.toLowerCase()];
    if (v === undefined || name.startsWith(':')) return null;
    return Array.isArray(v) ? v.join(', ') : String(v);
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  getSetCookie(): string[] {
    const v = this.raw['set-cookie'];
    return v === undefined ? [] : Array.isArray(v) ? [...v] : [String(v)];
  }

  forEach(cb: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) cb.call(thisArg, v, k, this);
  }

  *entries(): IterableIterator<[string, string]> {
    const names = Object.keys(this.raw)
      .filter((k) => !k.startsWith(':') && this.raw[k] !== undefined)
      .sort();
    for (const k of names) yield [k, this.get(k)!];
  }

  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }

  set(): void {
    throw new TypeError('request headers are read-only');
  }

  append(): void {
    throw new TypeError('request headers are read-only');
  }

  delete(): void {
    throw new TypeError('request headers are read-only');
  }
}
