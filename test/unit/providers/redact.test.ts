/** Vendor error text loses the credentials it echoes (shared/providers/redact.ts). */
import { describe, expect, it } from 'vitest';
import { redactSecrets, secretsInHeaders } from '../../../shared/providers/redact.js';

describe('redactSecrets', () => {
  it('replaces every occurrence, and the start of one at the end of a cut text', () => {
    const key = 'sk-live-ABCDEFGHIJ0123456789';
    expect(redactSecrets(`bad key ${key}; again ${key}.`, [key])).toBe('bad key [redacted]; again [redacted].');
    // Cut at a length limit mid-key: the first characters left at the end are redacted too.
    expect(redactSecrets(`Incorrect API key provided: ${key.slice(0, 14)}`, [key])).toBe('Incorrect API key provided: [redacted]');
    // A shorter start is too often an ordinary word: "account acme-c" is not a cut "acme-corp-secret".
    expect(redactSecrets('ends with sk-live-A', [key])).toBe('ends with sk-live-A');
    expect(redactSecrets('account acme-c', ['acme-corp-secret'])).toBe('account acme-c');
    expect(redactSecrets('a short key abc', ['abc'])).toBe('a short key abc');
    expect(redactSecrets('nothing here', [undefined, ''])).toBe('nothing here');
  });

  it('finds the credentials of a request in its headers, without their scheme', () => {
    expect(secretsInHeaders({ Authorization: 'Bearer sk-123456', 'xi-api-key': 'el-abcdef', 'X-Auth-Token': 'custom-tok-1', 'content-type': 'application/json', accept: 'application/json' })).toEqual(['sk-123456', 'el-abcdef', 'custom-tok-1']);
    expect(secretsInHeaders({ authorization: 'Token dg-abcdef12' })).toEqual(['dg-abcdef12']);
    expect(secretsInHeaders(undefined)).toEqual([]);
  });
});
