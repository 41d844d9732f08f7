/** The edge text check (control-plane/http/input.ts) on decoded messages, without a server. */
import { describe, expect, it } from 'vitest';
import { create, fromBinary, fromJson } from '@bufbuild/protobuf';
import { CreateQaRubricRequestSchema } from '../../../shared/gen/voiceplane/v1/qa_pb.js';
import { CreateMemoryItemRequestSchema } from '../../../shared/gen/voiceplane/v1/accounts_pb.js';
import { assertStorableText, isStorableText, MAX_INPUT_DEPTH } from '../../../control-plane/http/input.js';

const field = (fn: () => void): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (e) {
    return (e as { details?: Array<{ field: string }> }).details?.[0]?.field;
  }
};

describe('assertStorableText', () => {
  it('names the field of a NUL or a lone surrogate, scalar or inside Struct JSON', () => {
    const msg = (init: object) => create(CreateMemoryItemRequestSchema, { workspaceId: 'w', title: 't', content: 'c', ...init });
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg({ content: 'a\u0000' })))).toBe('content');
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg({ metadata: { a: { b: ['ok', '\uDC00'] } } })))).toBe('metadata.a.b[1]');
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg({ metadata: { 'k\u0000': 1 } })))).toBe('metadata');
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg({ metadata: { emoji: '🎧', accents: 'Zoë' } })))).toBeUndefined();
  });

  it('names the field of a number JSON cannot hold (1e309 parses as Infinity), plain or as a Value message', () => {
    const msg = (init: object) => create(CreateMemoryItemRequestSchema, { workspaceId: 'w', title: 't', content: 'c', ...init });
    const parsed = JSON.parse('{"a":[1,{"w":1e309}]}') as object;
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg({ metadata: parsed })))).toBe('metadata.a[1].w');
    // What the JSON decoder makes of it: Value messages inside the Struct; toJson of one throws.
    const decoded = fromJson(CreateMemoryItemRequestSchema, { workspace_id: 'w', title: 't', content: 'c', metadata: { q: Infinity } } as never);
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, decoded))).toMatch(/^metadata/);
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg({ metadata: { n: 1e308 } })))).toBeUndefined();
  });

  it('a Value with no kind set (a gRPC client can send one) is named as such, not as a number out of range', () => {
    // Field 4 (criteria, a google.protobuf.Value) present but empty: tag 0x22, length 0.
    const decoded = fromBinary(CreateQaRubricRequestSchema, Uint8Array.from([0x22, 0x00]));
    try {
      assertStorableText(CreateQaRubricRequestSchema, decoded);
      expect.unreachable('an unset Value passed');
    } catch (e) {
      expect((e as { details?: Array<{ field: string; problem: string }> }).details?.[0]).toMatchObject({ field: 'criteria', problem: expect.stringMatching(/no kind set/) });
    }
  });

  it('refuses JSON nested deeper than the bound instead of walking it', () => {
    let deep: Record<string, unknown> = { leaf: 'x' };
    for (let i = 0; i < MAX_INPUT_DEPTH + 5; i++) deep = { d: deep };
    const msg = create(CreateMemoryItemRequestSchema, { workspaceId: 'w', title: 't', content: 'c', metadata: deep as never });
    expect(field(() => assertStorableText(CreateMemoryItemRequestSchema, msg))).toMatch(/^metadata(\.d)+$/);
  });

  it('pairs are fine, halves are not', () => {
    expect(isStorableText('\uD83C\uDFA7')).toBe(true);
    expect(isStorableText('\uD83C')).toBe(false);
    expect(isStorableText('\uDFA7x')).toBe(false);
    expect(isStorableText('a\u0000')).toBe(false);
  });
});
