import { describe, expect, it } from 'vitest';
import { isBackchannel, isLikelyEcho, mayBecomeBackchannel } from '../../../media-engine/session/backchannel.js';

describe('backchannels', () => {
  it.each(['uh-huh', 'Okay.', 'yeah', 'yeah yeah', 'mhm', 'right', 'ok ok', 'Got it.'])('%s is a backchannel', (t) => {
    expect(isBackchannel(t)).toBe(true);
  });
  it.each(['stop', 'wait a second', 'okay but what about tuesday', 'no', 'hold on'])('%s is real speech', (t) => {
    expect(isBackchannel(t)).toBe(false);
  });
  it('treats growing interim prefixes of a backchannel as not yet speech', () => {
    for (const t of ['o', 'ok', 'oka', 'okay', 'uh-h', 'yea']) expect(mayBecomeBackchannel(t)).toBe(true);
    for (const t of ['sto', 'okay but', 'wai']) expect(mayBecomeBackchannel(t)).toBe(false);
  });
});

describe('echo detection', () => {
  const agent = 'Our restaurant opened in 1998 in a small street near the old market.';
  it('recognises the agent’s own words in order, including a cut-off last word', () => {
    expect(isLikelyEcho('opened in 1998', agent)).toBe(true);
    expect(isLikelyEcho('small stre', agent)).toBe(true);
  });
  it('does not mistake the caller for an echo', () => {
    expect(isLikelyEcho('can I book a table', agent)).toBe(false);
    expect(isLikelyEcho('market old', agent)).toBe(false);
  });
});
