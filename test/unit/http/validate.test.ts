import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { pageMeta, pageOf as page } from '../../../control-plane/http/pagination.js';
import { email, longerThan, password, pathId, required, sameOrigin } from '../../../control-plane/http/validate.js';

/** The AppError `fn` throws, or undefined when it returns. */
function thrown(fn: () => unknown): AppError | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return e as AppError;
  }
}

function code(fn: () => unknown): string | undefined {
  return thrown(fn)?.code;
}

describe('field checks', () => {
  it('email: trimmed, lower-cased, shaped', () => {
    expect(email('email', '  Bob@Example.COM ')).toBe('bob@example.com');
    for (const bad of ['', 'bob', 'bob@', '@x.co', 'a b@x.co', 'bob@localhost', `${'a'.repeat(250)}@x.co`]) {
      expect(code(() => email('email', bad)), bad).toBe('INVALID_REQUEST');
    }
  });

  it('password: 8 to 256 characters, kept as sent', () => {
    expect(password('password', ' 8 chars')).toBe(' 8 chars');
    expect(password('password', 'x'.repeat(256))).toHaveLength(256);
    expect(code(() => password('password', 'x'.repeat(7)))).toBe('INVALID_REQUEST');
    expect(code(() => password('password', 'x'.repeat(257)))).toBe('INVALID_REQUEST');
    // Characters, not UTF-16 units: four emoji are 4 characters (8 units).
    expect(code(() => password('password', '😀'.repeat(4)))).toBe('INVALID_REQUEST');
    expect(password('password', '😀'.repeat(8))).toBe('😀'.repeat(8));
    expect(password('password', '😀'.repeat(256))).toHaveLength(512);
  });

  it('required names the field', () => {
    // Asserted outside any catch: a `required` that stopped throwing fails here instead of passing.
    const e = thrown(() => required('first_name', '  '));
    expect(e).toBeInstanceOf(AppError);
    expect(e?.code).toBe('INVALID_REQUEST');
    expect(e?.details).toEqual([{ field: 'first_name', problem: 'is required' }]);
    expect(required('first_name', '  Ann ')).toBe('Ann');
  });

  it('lengths are counted in characters (code points), like passwords and Postgres char_length', () => {
    const emoji = '\u{1F600}';
    expect(longerThan(emoji.repeat(150), 200)).toBe(false);
    expect(longerThan(emoji.repeat(200), 200)).toBe(false);
    expect(longerThan(emoji.repeat(201), 200)).toBe(true);
    expect(longerThan('a'.repeat(200), 200)).toBe(false);
    expect(longerThan('a'.repeat(201), 200)).toBe(true);
    // A lone surrogate is a character of its own (as Postgres would store it after our NUL/surrogate checks).
    expect(longerThan('\udc00'.repeat(3), 2)).toBe(true);
    expect(longerThan('\ud800'.repeat(3), 2)).toBe(true);
    expect(code(() => required('name', emoji.repeat(150)))).toBeUndefined();
    expect(thrown(() => required('name', emoji.repeat(201)))?.details?.[0]?.field).toBe('name');
  });

  it('sameOrigin: scheme, host and port; "" is the vendor default', () => {
    expect(sameOrigin('https://a.example/v1', 'https://a.example/v2')).toBe(true);
    expect(sameOrigin('https://a.example/v1', 'https://A.EXAMPLE:443/x')).toBe(true);
    expect(sameOrigin('https://a.example/v1', 'http://a.example/v1')).toBe(false);
    expect(sameOrigin('https://a.example/v1', 'https://a.example:8443/v1')).toBe(false);
    expect(sameOrigin('https://a.example/v1', 'https://b.example/v1')).toBe(false);
    expect(sameOrigin('https://a.example', '')).toBe(false);
    expect(sameOrigin('', '')).toBe(true);
  });

  it('path ids: non-UUIDs are NOT_FOUND', () => {
    expect(pathId('workspace', '0190A000-0000-7000-8000-000000000000')).toBe('0190a000-0000-7000-8000-000000000000');
    expect(code(() => pathId('workspace', 'abc'))).toBe('NOT_FOUND');
    expect(code(() => pathId('workspace', ''))).toBe('NOT_FOUND');
  });

  it('pages: default 20, max 200, offset >= 0; meta per the API conventions', () => {
    expect(page({})).toEqual({ limit: 20, offset: 0 });
    expect(code(() => page({ limit: 0 }))).toBe('INVALID_REQUEST');
    expect(code(() => page({ limit: 201 }))).toBe('INVALID_REQUEST');
    expect(code(() => page({ offset: -1 }))).toBe('INVALID_REQUEST');
    expect(pageMeta({ limit: 20, offset: 40 }, 41)).toEqual({ page: 3, perPage: 20, total: 41, totalPages: 3 });
  });
});
