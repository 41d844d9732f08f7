/**
 * parseCarrierFrame against the fixtures in test/fixtures/protocol/twilio/{good,bad} (good/bad
 * fixture folders). A bad fixture's file name starts with the reason it must be refused for
 * (`bad_chunk--2e8-string.json`), so adding a case is adding a file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAX_CARRIER_FRAME_CHARS, parseCarrierFrame, parseCounter } from '../../../shared/protocol/twilio-media.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/protocol/twilio');
const load = (kind: 'good' | 'bad') => readdirSync(path.join(dir, kind)).map((f) => ({ name: f.replace(/\.json$/, ''), text: readFileSync(path.join(dir, kind, f), 'utf8').trim() }));

describe('one carrier frame freezes the node: carrier frames decoded at the edge', () => {
  it.each(load('good'))('accepts good/$name', ({ name, text }) => {
    const r = parseCarrierFrame(text);
    expect(r).toMatchObject({ ok: true, frame: { event: name.split('-')[0] } });
  });

  it.each(load('bad'))('refuses bad/$name for its reason', ({ name, text }) => {
    expect(parseCarrierFrame(text)).toEqual({ ok: false, reason: name.split('--')[0] });
  });

  it('refuses frames above the size bound before parsing them, and ignores unknown events', () => {
    expect(parseCarrierFrame(`{"event":"media","pad":"${'x'.repeat(MAX_CARRIER_FRAME_CHARS)}"}`)).toEqual({ ok: false, reason: 'too_large' });
    expect(parseCarrierFrame('{"event":"something_new","x":1}')).toEqual({ ok: true, frame: { event: 'unknown' } });
  });

  it('parseCounter takes digit strings and JSON numbers that are non-negative safe integers only', () => {
    const table: Array<[unknown, number | undefined]> = [
      ['0', 0],
      ['42', 42],
      [42, 42],
      [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
      ['9007199254740991', Number.MAX_SAFE_INTEGER],
      ['9007199254740992', undefined],
      ['9007199254740993', undefined],
      [9007199254740993, undefined],
      ['2e8', undefined],
      [2e8, 2e8],
      ['1e300', undefined],
      [1e300, undefined],
      ['-1', undefined],
      [-1, undefined],
      ['abc', undefined],
      ['1.5', undefined],
      [1.5, undefined],
      ['', undefined],
      [' 1', undefined],
      ['0x10', undefined],
      ['1'.repeat(17), undefined],
      [Number.NaN, undefined],
      [Number.POSITIVE_INFINITY, undefined],
      [null, undefined],
      [[1], undefined],
    ];
    for (const [input, want] of table) expect([input, parseCounter(input)]).toEqual([input, want]);
  });
});
