/**
 * The agent's voice paced out (media-engine/session/speech-output.ts) when the TTS streams small,
 * uneven chunks, as real vendors do: whole frames only while a piece streams (no silence inside
 * the speech), real-time pacing with the lead, and the piece's last partial frame once it ends.
 */
import { describe, expect, it } from 'vitest';
import { SpeechOutput } from '../../../media-engine/session/speech-output.js';
import type { CallTransport } from '../../../media-engine/session/transport.js';

const RATE = 16000;
const FRAME = 320;

function fakeTransport() {
  const frames: Int16Array[] = [];
  const t = {
    kind: 'browser',
    inRateHz: RATE,
    outRateHz: RATE,
    leadMs: 100,
    sendEvent: () => {},
    sendAudio: (f: Int16Array) => frames.push(f.slice()),
    flushAudio: () => {},
    clearAudio: () => {},
    mark: () => {},
    close: () => {},
  };
  return { frames, transport: t as unknown as CallTransport };
}

const clock = { monotonicMs: () => 0, now: () => 0 } as never;
/** A ramp that is never zero, so any zero sample sent is padding. */
const speech = (from: number, n: number) => Int16Array.from({ length: n }, (_, i) => 1000 + ((from + i) % 20000));

describe('SpeechOutput with a TTS streaming small, uneven chunks', () => {
  it('sends no silence inside the speech, paces in real time, and sends the last partial frame when the piece ends', () => {
    const { frames, transport } = fakeTransport();
    const out = new SpeechOutput(transport, clock);
    out.resetTurn();
    out.beginSegment('Hello there, how can I help you today?');
    // 500 samples (31.25 ms) every 10 ms: three times real time, never on a frame boundary.
    let sent = 0;
    let now = 0;
    for (let i = 0; i < 56; i++, now += 10) {
      out.enqueue(speech(sent, 500), RATE);
      sent += 500;
      out.pace(now);
      // Real time plus the lead (100 ms = 5 frames) plus the frame due now, never more.
      expect(frames.length).toBeLessThanOrEqual(Math.floor(now / 20) + 1 + 5);
    }
    out.endSegment();
    for (; out.pace(now) === false; now += 20) if (now > 10_000) throw new Error('never drained');
    const all = new Int16Array(frames.length * FRAME);
    frames.forEach((f, i) => all.set(f, i * FRAME));
    // Every sample of the speech, in order, then at most one frame's padding: no gaps inside.
    expect(Array.from(all.subarray(0, sent))).toEqual(Array.from(speech(0, sent)));
    expect(all.length - sent).toBeLessThan(FRAME);
    expect(all.subarray(sent).every((x) => x === 0)).toBe(true);
    // 28,000 samples are 1,750 ms: they took about that long to leave, less the lead.
    expect(now).toBeGreaterThanOrEqual(1750 - 100 - 20);
  });

  it('a TTS twice real time in chunks the lead swallows whole is still paced in real time (the queue empties between chunks)', () => {
    const { frames, transport } = fakeTransport();
    const out = new SpeechOutput(transport, clock);
    out.resetTurn();
    out.beginSegment('Hello there, welcome to the restaurant. We open at noon.');
    // 100 ms (5 frames) every 50 ms for 2 s of audio; the pacer ticks every 10 ms as the node's does.
    let now = 0;
    for (let chunk = 0; chunk < 20; ) {
      if (now % 50 === 0) out.enqueue(speech(chunk++ * 5 * FRAME, 5 * FRAME), RATE);
      out.pace(now);
      expect(frames.length, `at ${now} ms`).toBeLessThanOrEqual(Math.floor(now / 20) + 1 + 5);
      now += 10;
    }
    out.endSegment();
    for (; out.pace(now) === false; now += 10) if (now > 10_000) throw new Error('never drained');
    expect(frames).toHaveLength(100);
    // 2 s of audio left over about 2 s, less the lead.
    expect(now).toBeGreaterThanOrEqual(2000 - 100 - 20);
  });

  it('a TTS slower than real time resumes with the usual lead, not with every frame that came due meanwhile', () => {
    const { frames, transport } = fakeTransport();
    const out = new SpeechOutput(transport, clock);
    out.resetTurn();
    out.beginSegment('Slow.');
    out.enqueue(speech(0, FRAME * 2), RATE);
    out.pace(0);
    expect(frames).toHaveLength(2);
    // One second without audio, then ten frames at once: the lead (5) plus the frame due now leave.
    out.enqueue(speech(FRAME * 2, FRAME * 10), RATE);
    out.pace(1000);
    expect(frames).toHaveLength(2 + 6);
  });
});
