import { describe, expect, it } from 'vitest';
import { maskSessionId, newSecretId } from '../../../shared/ids.js';
import { systemError } from '../../../shared/errors.js';

describe('maskSessionId', () => {
  it('keeps a 6-character prefix for correlation and never the rest of the credential', () => {
    const id = newSecretId();
    const masked = maskSessionId(id);
    expect(masked).toBe(`${id.slice(0, 6)}…`);
    expect(masked).not.toContain(id.slice(6, 12));
  });
});

describe('systemError', () => {
  it('is an Error with the Node errno code that Node APIs and our dependency checks read', () => {
    const e = systemError('ENOTFOUND', 'x: no address');
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('ENOTFOUND');
    expect(e.message).toBe('x: no address');
  });
});
