import { describe, expect, it } from 'vitest';
import { PlayoutQueue } from '../../../media-engine/session/playout.js';

describe('PlayoutQueue', () => {
  it('hands out 20 ms frames in order and pads the last one', () => {
    const q = new PlayoutQueue(8000, 1);
    const src = Int16Array.from({ length: 400 }, (_, i) => i);
    q.enqueue(src);
    const f = new Int16Array(160);
    expect(q.takeFrame(f)).toBe(true);
    expect(f[0]).toBe(0);
    expect(q.takeFrame(f)).toBe(true);
    expect(f[0]).toBe(160);
    expect(q.takeFrame(f)).toBe(true);
    expect(f[79]).toBe(399);
    expect(f[80]).toBe(0);
    expect(q.takeFrame(f)).toBe(false);
    expect(q.sentSamples).toBe(400);
  });

  it('wraps around the ring and bounds memory, counting what it dropped', () => {
    const q = new PlayoutQueue(8000, 1); // 8000 samples
    const f = new Int16Array(160);
    q.enqueue(new Int16Array(7000));
    for (let i = 0; i < 40; i++) q.takeFrame(f);
    expect(q.enqueue(new Int16Array(3000).fill(7))).toBe(3000);
    expect(q.queuedSamples).toBe(7000 - 6400 + 3000);
    expect(q.enqueue(new Int16Array(10_000))).toBe(8000 - 3600);
    expect(q.droppedSamples).toBe(10_000 - 4400);
  });

  it('reports what the caller heard: whole segments and the played share of the next', () => {
    const q = new PlayoutQueue(16000, 10);
    q.beginSegment('Hello there.');
    q.enqueue(new Int16Array(16000));
    q.endSegment();
    q.beginSegment('Our hours are nine to five every day.');
    q.enqueue(new Int16Array(32000));
    q.endSegment();
    expect(q.heardText(0)).toBe('');
    expect(q.heardText(16000)).toBe('Hello there.');
    expect(q.heardText(16000 + 16000)).toBe('Hello there. Our hours are nine');
    expect(q.heardText(48000)).toBe('Hello there. Our hours are nine to five every day.');
  });

  it('flush drops queued audio; resetTurn also resets positions', () => {
    const q = new PlayoutQueue(16000, 1);
    q.enqueue(new Int16Array(1000));
    q.flush();
    expect(q.queuedSamples).toBe(0);
    expect(q.takeFrame(new Int16Array(320))).toBe(false);
    q.resetTurn();
    expect(q.enqueuedSamples).toBe(0);
    expect(q.segments).toEqual([]);
  });
});

describe('PlayoutQueue growth', () => {
  it('starts small, grows on demand with the queued audio intact across the wrap, and stops at the cap', () => {
    const q = new PlayoutQueue(8000, 10); // nothing until the first audio, then 2 s = 16000 samples, cap 80000
    const f = new Int16Array(160);
    expect(q.allocatedSamples).toBe(0);
    expect(q.takeFrame(f)).toBe(false);
    q.enqueue(Int16Array.from({ length: 15000 }, (_, i) => i % 30000));
    expect(q.allocatedSamples).toBe(16000);
    for (let i = 0; i < 50; i++) q.takeFrame(f); // read 8000: the next write wraps
    q.enqueue(Int16Array.from({ length: 8000 }, (_, i) => (15000 + i) % 30000)); // wraps around the small ring
    q.enqueue(Int16Array.from({ length: 20000 }, (_, i) => (23000 + i) % 30000)); // forces growth
    expect(q.queuedSamples).toBe(7000 + 8000 + 20000);
    let expected = 8000;
    while (q.takeFrame(f)) {
      for (let i = 0; i < f.length && expected < 43000; i++, expected++) expect(f[i]).toBe(expected % 30000);
    }
    expect(expected).toBe(43000);
    expect(q.enqueue(new Int16Array(100_000))).toBe(80000);
    expect(q.droppedSamples).toBe(20000);
  });
});
