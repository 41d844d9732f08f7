import { describe, expect, it } from 'vitest';
import { NodeRequestHeaders } from '../../../control-plane/http/request-headers.js';

describe('NodeRequestHeaders', () => {
  const h = new NodeRequestHeaders({ ':path': '/x', authorization: 'Bearer t', 'x-forwarded-for': ['1.1.1.1', '2.2.2.2'], accept: 'application/json', empty: undefined });

  it('reads like web Headers: any case, repeated values joined, pseudo-headers hidden', () => {
    expect(h.get('Authorization')).toBe('Bearer t');
    expect(h.get('x-forwarded-for')).toBe('1.1.1.1, 2.2.2.2');
    expect(h.get(':path')).toBeNull();
    expect(h.get('missing')).toBeNull();
    expect(h.has('ACCEPT')).toBe(true);
    expect(h.has('empty')).toBe(false);
  });

  it('iterates in sorted order like web Headers, and equals a Headers built from the same input', () => {
    const web = new Headers([
      ['authorization', 'Bearer t'],
      ['x-forwarded-for', '1.1.1.1, 2.2.2.2'],
      ['accept', 'application/json'],
    ]);
    expect([...h]).toEqual([...web]);
    const seen: string[] = [];
    h.forEach((v, k) => seen.push(`${k}=${v}`));
    expect(seen).toEqual(['accept=application/json', 'authorization=Bearer t', 'x-forwarded-for=1.1.1.1, 2.2.2.2']);
  });

  it('refuses writes', () => {
    expect(() => h.set()).toThrow(TypeError);
    expect(() => h.append()).toThrow(TypeError);
    expect(() => h.delete()).toThrow(TypeError);
  });
});
