import { describe, expect, it } from 'vitest';
import { PlayoutQueue } from '../../../media-engine/session/playout.js';
import { giveBlock, MAX_POOLED_BYTES, pooledBlockBytes, takeBlock } from '../../../media-engine/session/playout-blocks.js';

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

  it('a sentence whose audio has not arrived was not heard; one still arriving counts only what played of it', () => {
    const q = new PlayoutQueue(16000, 10);
    q.beginSegment('You said: msg 0.');
    // No audio yet (a run superseded before its TTS answered): nothing heard.
    expect(q.heardText(0)).toBe('');
    // The next sentence: 0.5 s of its audio has arrived and played.
    q.endSegment();
    q.beginSegment('Our opening hours are nine to five daily.');
    q.enqueue(new Int16Array(8000));
    expect(q.heardText(8000)).toBe('Our'); // 8 words over ~2.56 s expected: 0.5 s of it is one word
    q.enqueue(new Int16Array(32000));
    q.endSegment();
    expect(q.heardText(40000)).toBe('Our opening hours are nine to five daily.');
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

describe('PlayoutQueue blocks', () => {
  it('holds blocks only for queued audio: taken as it arrives, given back as it plays, capped', () => {
    const q = new PlayoutQueue(8000, 10); // one-second blocks of 8000 samples, cap 80000
    const f = new Int16Array(160);
    expect(q.allocatedSamples).toBe(0);
    expect(q.takeFrame(f)).toBe(false);
    q.enqueue(Int16Array.from({ length: 15000 }, (_, i) => i % 30000));
    expect(q.allocatedSamples).toBe(16000);
    for (let i = 0; i < 50; i++) q.takeFrame(f); // 8000 played: the first block goes back
    expect(q.allocatedSamples).toBe(8000);
    q.enqueue(Int16Array.from({ length: 8000 }, (_, i) => (15000 + i) % 30000));
    q.enqueue(Int16Array.from({ length: 20000 }, (_, i) => (23000 + i) % 30000));
    expect(q.queuedSamples).toBe(7000 + 8000 + 20000);
    let expected = 8000;
    while (q.takeFrame(f)) {
      for (let i = 0; i < f.length && expected < 43000; i++, expected++) expect(f[i]).toBe(expected % 30000);
    }
    expect(expected).toBe(43000);
    expect(q.allocatedSamples).toBe(0);
    expect(q.enqueue(new Int16Array(100_000))).toBe(80000);
    expect(q.droppedSamples).toBe(20000);
    expect(q.allocatedSamples).toBe(80000);
    q.flush();
    expect(q.allocatedSamples).toBe(0);
  });

  it('reads a frame across two blocks and hands the first back once it is played', () => {
    const q = new PlayoutQueue(8000, 10); // blocks of 8000 samples
    const f = new Int16Array(170);
    q.enqueue(Int16Array.from({ length: 8200 }, (_, i) => i)); // a full block and 200 samples
    for (let i = 0; i < 47; i++) q.takeFrame(f); // 7990 played: 10 left in the first block
    expect(q.allocatedSamples).toBe(16000);
    expect(q.takeFrame(f)).toBe(true); // 10 from the first block, 160 from the second
    expect(f[0]).toBe(7990);
    expect(f[9]).toBe(7999);
    expect(f[10]).toBe(8000);
    expect(f[169]).toBe(8159);
    expect(q.allocatedSamples).toBe(8000);
    expect(q.takeFrame(f)).toBe(true); // the last 40, padded
    expect(f[39]).toBe(8199);
    expect(f[40]).toBe(0);
    expect(q.allocatedSamples).toBe(0);
    expect(q.takeFrame(f)).toBe(false);
  });

  it('reuses played blocks across queues: a warmed-up process allocates none', () => {
    const a = new PlayoutQueue(8000, 10);
    const b = new PlayoutQueue(8000, 10);
    const f = new Int16Array(160);
    a.enqueue(new Int16Array(24000)); // three blocks
    const first = new Set<Int16Array>((a as unknown as { blocks: Int16Array[] }).blocks);
    a.flush(); // back to the pool
    expect(pooledBlockBytes()).toBeGreaterThanOrEqual(3 * 8000 * 2);
    b.enqueue(new Int16Array(24000));
    const reused = (b as unknown as { blocks: Int16Array[] }).blocks;
    expect(reused.every((block) => first.has(block))).toBe(true);
    while (b.takeFrame(f));
    // Every block went back as it was played; taking them again allocates nothing new.
    a.enqueue(new Int16Array(24000));
    expect((a as unknown as { blocks: Int16Array[] }).blocks.every((block) => first.has(block))).toBe(true);
  });

  it('keeps at most MAX_POOLED_BYTES of free blocks', () => {
    const blocks: Int16Array[] = [];
    for (let i = 0; i < MAX_POOLED_BYTES / (16000 * 2) + 10; i++) blocks.push(takeBlock(16000));
    for (const block of blocks) giveBlock(block);
    expect(pooledBlockBytes()).toBeLessThanOrEqual(MAX_POOLED_BYTES);
    expect(pooledBlockBytes()).toBeGreaterThan(MAX_POOLED_BYTES - 16000 * 2);
  });
});
