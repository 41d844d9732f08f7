import { describe, expect, it } from 'vitest';
import { SentenceChunker } from '../../../media-engine/session/chunker.js';

function run(deltas: string[]): string[] {
  const c = new SentenceChunker();
  const out: string[] = [];
  for (const d of deltas) out.push(...c.push(d));
  return [...out, ...c.flush()];
}

describe('SentenceChunker', () => {
  it('cuts at sentence ends as soon as the following space arrives', () => {
    const c = new SentenceChunker();
    expect(c.push('Hello there.')).toEqual([]);
    expect(c.push(' How')).toEqual(['Hello there.']);
    expect(c.push(' are you? Fine')).toEqual(['How are you?']);
    expect(c.flush()).toEqual(['Fine']);
  });

  it('streams token by token to the same pieces', () => {
    const text = 'Sure. We open at 9.30 daily, and Dr. Smith is in on Mondays. Anything else?';
    const tokens = text.match(/\S+\s*/g)!;
    expect(run(tokens)).toEqual(['Sure.', 'We open at 9.30 daily, and Dr. Smith is in on Mondays.', 'Anything else?']);
  });

  it('cuts the first piece early at a clause boundary, later ones only when long', () => {
    const out = run(['Well, let me check that for you, one moment please', ' while I look it up, it takes a second']);
    expect(out[0]).toBe('Well, let me check that for you,');
    expect(out.length).toBe(2);
  });

  it('hard-cuts text with no boundary at a space', () => {
    const long = 'word '.repeat(100);
    const out = run([long]);
    expect(out.length).toBeGreaterThan(1);
    for (const p of out) expect(p.length).toBeLessThanOrEqual(240);
    expect(out.join(' ').split(' ').length).toBe(100);
  });
});
