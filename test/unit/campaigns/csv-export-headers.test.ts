import { describe, expect, it } from 'vitest';
import { variableHeaders } from '../../../control-plane/campaigns/csv-export.js';

describe('export headers of contact variables', () => {
  it('keeps a name unless it is one of the fixed columns; then var_<name>, never a name already used', () => {
    expect(variableHeaders(['city', 'Name'])).toEqual(['city', 'Name']);
    expect(variableHeaders(['phone', 'status', 'attempts', 'note'])).toEqual(['var_phone', 'var_status', 'var_attempts', 'note']);
    expect(variableHeaders(['status', 'var_status'])).toEqual(['var_var_status', 'var_status']);
    const all = ['phone', ...variableHeaders(['phone', 'status', 'var_status', 'dialed_at']), 'status', 'attempts', 'duration_seconds', 'dialed_at', 'completed_at', 'error_message'];
    expect(new Set(all).size).toBe(all.length);
  });
});
