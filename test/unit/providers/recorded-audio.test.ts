/**
 * Call recordings as the human-segment transcription reads them (issue 21): the WAV forms carriers
 * serve (16-bit PCM or mu-law, mono or one channel per leg) and recorded audio cut into
 * utterances for a streaming ASR (the sim ASR decodes sim-coded speech).
 */
import { describe, expect, it } from 'vitest';
import { parseWavChannels } from '../../../shared/providers/audio/wav.js';
import { encodeWavChannels } from '../../helpers/wav.js';
import { transcribeRecorded, utteranceSpans } from '../../../shared/providers/asr/recorded.js';
import { createSimAsr } from '../../../shared/providers/asr/sim.js';
import { encodeText } from '../../../shared/providers/sim/codec.js';
import { MULAW_DECODE_TABLE } from '../../../shared/providers/tts/pcm-bytes.js';
import { realClock } from '../../../shared/clock.js';

/** A WAV with a hand-written fmt chunk (format code, channels, bits) and `data` bytes. */
function wav(format: number, channels: number, bits: number, rate: number, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(44 + data.length);
  const v = new DataView(out.buffer);
  out.set([...'RIFF'].map((c) => c.charCodeAt(0)), 0);
  v.setUint32(4, 36 + data.length, true);
  out.set([...'WAVEfmt '].map((c) => c.charCodeAt(0)), 8);
  v.setUint32(16, 16, true);
  v.setUint16(20, format, true);
  v.setUint16(22, channels, true);
  v.setUint32(24, rate, true);
  v.setUint32(28, (rate * channels * bits) / 8, true);
  v.setUint16(32, (channels * bits) / 8, true);
  v.setUint16(34, bits, true);
  out.set([...'data'].map((c) => c.charCodeAt(0)), 36);
  v.setUint32(40, data.length, true);
  out.set(data, 44);
  return out;
}

describe('parseWavChannels', () => {
  it('de-interleaves a dual-channel 16-bit PCM recording', () => {
    const a = Int16Array.from([1, -2, 300, -32768]);
    const b = Int16Array.from([32767, 5, -6, 0]);
    const parsed = parseWavChannels(encodeWavChannels([a, b], 8000));
    expect(parsed.sampleRateHz).toBe(8000);
    expect(parsed.channels.map((c) => [...c])).toEqual([[...a], [...b]]);
  });

  it('decodes mu-law (format 7) through the G.711 table, mono and dual', () => {
    const bytes = Uint8Array.from([0x00, 0x7f, 0x80, 0xff]);
    expect([...parseWavChannels(wav(7, 1, 8, 8000, bytes)).channels[0]!]).toEqual([...bytes].map((x) => MULAW_DECODE_TABLE[x]));
    const dual = parseWavChannels(wav(7, 2, 8, 8000, bytes));
    expect(dual.channels.map((c) => [...c])).toEqual([
      [MULAW_DECODE_TABLE[0x00], MULAW_DECODE_TABLE[0x80]],
      [MULAW_DECODE_TABLE[0x7f], MULAW_DECODE_TABLE[0xff]],
    ]);
  });

  it('refuses what it cannot read, naming it', () => {
    expect(() => parseWavChannels(wav(1, 1, 24, 8000, new Uint8Array(6)))).toThrow(/1\/1ch\/24bit/);
    expect(() => parseWavChannels(wav(1, 3, 16, 8000, new Uint8Array(6)))).toThrow(/3ch/);
    expect(() => parseWavChannels(new Uint8Array(10))).toThrow(/RIFF/);
  });
});

describe('recorded audio through a streaming ASR', () => {
  const RATE = 8000;
  function channel(totalS: number, lines: Array<[number, string]>): Int16Array {
    const out = new Int16Array(totalS * RATE);
    for (const [atS, text] of lines) out.set(encodeText(text, RATE), Math.round(atS * RATE));
    return out;
  }

  it('cuts at silences and keeps each span\'s offset', () => {
    const spans = utteranceSpans(channel(6, [[0.5, 'first words'], [3, 'second']]), RATE);
    expect(spans).toHaveLength(2);
    expect(spans[0]![0] / RATE).toBeGreaterThan(0.3);
    expect(spans[0]![0] / RATE).toBeLessThan(0.5);
    expect(spans[1]![0] / RATE).toBeGreaterThan(2.8);
    expect(utteranceSpans(new Int16Array(RATE), RATE)).toEqual([]);
  });

  it('caps an utterance at maxUtteranceMs', () => {
    const loud = new Int16Array(RATE * 3).fill(5000);
    expect(utteranceSpans(loud, RATE, { maxUtteranceMs: 1000, padMs: 0 }).length).toBe(3);
  });

  it('gives each utterance\'s text and offset with the sim ASR', async () => {
    const got = await transcribeRecorded(createSimAsr(), channel(6, [[0.5, 'hello there'], [3, 'goodbye now']]), RATE, { clock: realClock });
    expect(got.map((u) => u.text)).toEqual(['hello there', 'goodbye now']);
    expect(got[1]!.startMs).toBeGreaterThan(2800);
    expect(got[1]!.startMs).toBeLessThan(3000);
  });

  it('refuses a sample rate the provider does not take', async () => {
    await expect(transcribeRecorded(createSimAsr(), new Int16Array(100), 11025, { clock: realClock })).rejects.toThrow(/11025/);
  });
});
