/**
 * BrowserTransport inbound audio (issue 11, "one carrier frame freezes the node", browser side):
 * any chunk size is re-framed to 20 ms, but audio is accepted only at real time plus a 3 s burst,
 * so a client pushing 64 KiB messages as fast as it can cannot make the node run VAD and ASR for
 * hundreds of seconds of audio per second.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { BrowserTransport, INBOUND_BURST_MS, MIN_FRAME_BYTES } from '../../../media-engine/transports/browser.js';

const socket = { send: () => 1, getBufferedAmount: () => 0, end: () => {} };

function setup() {
  const clock = new SimulatedClock();
  const t = new BrowserTransport(socket, clock);
  let frames = 0;
  const feed = (bytes: number) => t.receive(new ArrayBuffer(bytes), () => frames++);
  return { clock, t, feed, frames: () => frames };
}

describe('BrowserTransport inbound audio', () => {
  it('re-frames odd chunk sizes into 320-sample frames and drops messages under 10 bytes', () => {
    const { t, feed, frames } = setup();
    feed(9);
    expect(t.droppedInMessages).toBe(1);
    for (let i = 0; i < 64; i++) feed(641); // 64 x 320.5 samples = 20512 samples
    expect(frames()).toBe(64);
  });

  it('hands over the exact samples, whatever the chunking (odd sizes, samples split across messages)', () => {
    const clock = new SimulatedClock();
    const t = new BrowserTransport(socket, clock);
    const total = 320 * 40;
    const source = new Int16Array(total);
    for (let i = 0; i < total; i++) source[i] = ((i * 7919) % 65536) - 32768; // every byte value, both signs
    const bytes = new Uint8Array(source.buffer);
    const out: number[] = [];
    // Chunk sizes cycle through even and odd lengths, so the stream leaves and regains sample alignment.
    const sizes = [640, 641, 639, 10, 1001, 2, 33, 1280, 11, 999];
    let at = 0;
    for (let k = 0; at < bytes.length; k++) {
      const size = Math.max(MIN_FRAME_BYTES, Math.min(sizes[k % sizes.length]!, bytes.length - at));
      const chunk = bytes.slice(at, at + size);
      if (chunk.length < MIN_FRAME_BYTES) break;
      t.receive(chunk.buffer, (frame) => out.push(...frame));
      at += size;
      clock.advance(20);
    }
    expect(t.droppedInMessages).toBe(0);
    expect(out.length).toBe(Math.floor(at / 2 / 320) * 320);
    expect(Int16Array.from(out)).toEqual(source.subarray(0, out.length));
  });

  it('a message under 10 bytes is not part of the stream; audio dropped over the budget keeps the sample boundary', () => {
    const clock = new SimulatedClock();
    const t = new BrowserTransport(socket, clock);
    const source = Int16Array.from({ length: 60_000 }, (_, i) => ((i * 7919) % 65536) - 32768);
    const bytes = new Uint8Array(source.buffer);
    const out: number[] = [];
    const send = (chunk: Uint8Array) => {
      t.receive(chunk.slice().buffer, (frame) => out.push(...frame));
      clock.advance(20);
    };
    // A 3-byte junk message between whole frames (spec: discarded): the audio continues intact.
    send(bytes.subarray(0, 640));
    send(new Uint8Array(3));
    send(bytes.subarray(640, 1280));
    expect(out).toEqual([...source.subarray(0, 640)]);
    // 100,001 bytes at once: over the 3 s budget (48,000 samples), dropped. Its odd length leaves the stream
    // mid-sample: the next message's first byte (the high byte of sample 50,640) is skipped.
    send(bytes.subarray(1280, 101_281));
    for (let at = 101_281; at + 640 <= bytes.length; at += 640) send(bytes.subarray(at, at + 640));
    expect(t.droppedInMessages).toBe(2);
    const resumed = out.slice(640);
    expect(resumed.length).toBeGreaterThan(320 * 10);
    expect(resumed).toEqual([...source.subarray(50_641, 50_641 + resumed.length)]);
  });

  it('accepts real time plus the burst; a flood of 64 KiB messages is dropped and counted', () => {
    const { clock, t, feed, frames } = setup();
    feed(64 * 1024); // 32768 samples: inside the 3 s burst
    expect(frames()).toBe(102);
    for (let i = 0; i < 100; i++) feed(64 * 1024); // 100 x 2 s in no time: all beyond the budget
    expect(t.droppedInMessages).toBe(100);
    expect(frames()).toBe(102);
    // Real time refills the budget: 2 s later one more 2 s message fits.
    clock.advance(2000);
    feed(64 * 1024);
    expect(frames()).toBeGreaterThan(102);
    expect(t.droppedInMessages).toBe(100);
    // Steady real-time audio (20 ms per 20 ms) is never dropped.
    clock.advance(INBOUND_BURST_MS);
    for (let i = 0; i < 500; i++) {
      feed(640);
      clock.advance(20);
    }
    expect(t.droppedInMessages).toBe(100);
  });
});
