import { describe, expect, it } from 'vitest';
import { MAX_CLIENT_MESSAGE_CHARS, parseClientMessage } from '../../../shared/protocol/voice-socket.js';

const j = (v: unknown) => JSON.stringify(v);

describe('parseClientMessage', () => {
  it('reads playback_done and text_inject; ignores unknown types and malformed JSON (spec)', () => {
    expect(parseClientMessage(j({ type: 'playback_done' }))).toEqual({ type: 'playback_done' });
    expect(parseClientMessage(j({ type: 'text_inject', text: 'hi', role: 'system' }))).toEqual({ type: 'text_inject', text: 'hi', role: 'system' });
    expect(parseClientMessage(j({ type: 'text_inject', text: 'hi' }))).toEqual({ type: 'text_inject', text: 'hi', role: 'user' });
    expect(parseClientMessage(j({ type: 'garbage' }))).toBeUndefined();
    expect(parseClientMessage('not json')).toBeUndefined();
  });

  it('hands text over whole, so the call refuses what the HTTP text route refuses (no silent cut at 4,000)', () => {
    const long = 'x'.repeat(5000);
    expect(parseClientMessage(j({ type: 'text_inject', text: long, role: 'user' }))).toEqual({ type: 'text_inject', text: long, role: 'user' });
    expect(parseClientMessage(j({ type: 'text_inject', text: '   ', role: 'user' }))).toEqual({ type: 'text_inject', text: '   ', role: 'user' });
  });

  it('answers a bad role, a non-string text and an oversized frame as invalid (an error frame), never silence', () => {
    expect(parseClientMessage(j({ type: 'text_inject', text: 'hi', role: 'bogus' }))).toEqual({ type: 'invalid', message: 'text_inject: role must be user or system' });
    expect(parseClientMessage(j({ type: 'text_inject', text: 5 }))).toEqual({ type: 'invalid', message: 'text_inject: text must be a string' });
    expect(parseClientMessage(j({ type: 'text_inject', text: 'y'.repeat(MAX_CLIENT_MESSAGE_CHARS) }))).toMatchObject({ type: 'invalid' });
  });

  it('refuses text Postgres cannot store, as the HTTP text route does (it was stored with the NUL dropped)', () => {
    expect(parseClientMessage(j({ type: 'text_inject', text: 'a\u0000b' }))).toEqual({ type: 'invalid', message: 'text_inject: text must not contain NUL (\\u0000) characters' });
    expect(parseClientMessage('{"type":"text_inject","text":"a\\ud800b"}')).toEqual({ type: 'invalid', message: 'text_inject: text must not contain unpaired UTF-16 surrogates' });
    expect(parseClientMessage(j({ type: 'text_inject', text: 'caf\u00e9 \ud83d\ude00' }))).toEqual({ type: 'text_inject', text: 'caf\u00e9 \ud83d\ude00', role: 'user' });
  });
});
