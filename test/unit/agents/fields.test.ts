import { describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, checkAgentFields, checkConnectors } from '../../../control-plane/agents/core/fields.js';
import { AppError } from '../../../shared/errors.js';

const field = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as AppError).details?.[0]?.field;
  }
  return undefined;
};

describe('agent fields', () => {
  it('documented defaults', () => {
    expect(AGENT_DEFAULTS).toMatchObject({ language: 'en', max_turns: 50, connection_type: 'voice', interrupt_enabled: true, vad_threshold: 0.5, silence_timeout_ms: 8000, is_active: true, mode: 'single_prompt', allow_human_transfer: false, metadata: {} });
  });
  it('create requires a name, update does not', () => {
    expect(field(() => checkAgentFields({}, { create: true }))).toBe('name');
    expect(checkAgentFields({}, { create: false })).toEqual({});
  });
  it('maps camelCase input to stored snake_case fields, only those present', () => {
    expect(checkAgentFields({ systemPrompt: 'p', maxTurns: 3, vadThreshold: 0, language: 'pt-BR' }, { create: false })).toEqual({ system_prompt: 'p', max_turns: 3, vad_threshold: 0, language: 'pt-BR' });
  });
  it.each([
    [{ maxTurns: 0 }, 'max_turns'],
    [{ vadThreshold: -0.1 }, 'vad_threshold'],
    [{ silenceTimeoutMs: 600_001 }, 'silence_timeout_ms'],
    [{ language: 'e' }, 'language'],
    [{ mode: 'graph' }, 'mode'],
    [{ connectionType: 'sms' }, 'connection_type'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ metadata: { big: 'x'.repeat(70_000) } }, 'metadata'],
  ])('%j -> %s', (input, f) => expect(field(() => checkAgentFields(input as never, { create: false }))).toBe(f));
  it('connectors: trimmed, de-duplicated, bounded', () => {
    expect(checkConnectors([' crm ', 'crm', 'cal'])).toEqual(['crm', 'cal']);
    expect(field(() => checkConnectors(['ok', ' ']))).toBe('connectors[1]');
    expect(field(() => checkConnectors(Array.from({ length: 51 }, (_, i) => `c${i}`)))).toBe('connectors');
  });
});
