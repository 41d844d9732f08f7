/**
 * Ogg/Opus muxing of per-turn audio: the Ogg CRC against its golden vector, page structure
 * (OpusHead/OpusTags, lacing, granule positions, EOS), a decode round trip with libopus, the
 * batch packing used to move buffers to the worker, and the real piscina worker (compiled on the
 * fly from the TypeScript source, since vitest does not build `dist/`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import opus from '@discordjs/opus';
import { transpileToTemp } from '../../helpers/child-build.js';
import {
  encodeOggOpus,
  encodePackedBatch,
  oggCrc32,
  oggPage,
  packBytesBatch,
  packPcmBatch,
  PRE_SKIP_48K,
  unpackBytesBatch,
  unpackPcmBatch,
} from '../../../media-engine/workers/ogg-opus.js';
import { createAudioStore } from '../../../media-engine/records/audio-store.js';
import { captureLogger } from '../../helpers/infra.js';
import { parseWav, pcm16FromBytes } from '../../helpers/wav.js';

interface Page {
  flags: number;
  granule: bigint;
  serial: number;
  sequence: number;
  packets: Uint8Array[];
}

/** A minimal Ogg demuxer for the assertions (verifies every page CRC). */
export function parseOgg(bytes: Uint8Array): Page[] {
  const pages: Page[] = [];
  let off = 0;
  while (off < bytes.length) {
    expect(Buffer.from(bytes.subarray(off, off + 4)).toString('latin1')).toBe('OggS');
    const v = new DataView(bytes.buffer, bytes.byteOffset + off);
    const nseg = bytes[off + 26];
    const lacing = bytes.subarray(off + 27, off + 27 + nseg);
    const bodyLen = lacing.reduce((a, b) => a + b, 0);
    const total = 27 + nseg + bodyLen;
    const page = new Uint8Array(bytes.subarray(off, off + total));
    const crc = v.getUint32(22, true);
    new DataView(page.buffer).setUint32(22, 0, true);
    expect(oggCrc32(page)).toBe(crc);
    const packets: Uint8Array[] = [];
    let cur: number[] = [];
    let p = off + 27 + nseg;
    for (const l of lacing) {
      cur.push(...bytes.subarray(p, p + l));
      p += l;
      if (l < 255) {
        packets.push(Uint8Array.from(cur));
        cur = [];
      }
    }
    pages.push({ flags: bytes[off + 5], granule: v.getBigInt64(6, true), serial: v.getUint32(14, true), sequence: v.getUint32(18, true), packets });
    off += total;
  }
  return pages;
}

function tone(seconds: number, rateHz: number, freqHz = 440): Int16Array {
  const out = new Int16Array(Math.round(seconds * rateHz));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * freqHz * i) / rateHz));
  return out;
}

function rms(x: Int16Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return Math.sqrt(s / Math.max(1, x.length));
}

describe('ogg crc', () => {
  it('matches the CRC-32 (poly 0x04c11db7, init 0, no xor) check value', () => {
    // CRC-32/CKSUM's check value is 0x765E7680 with a final xor of 0xFFFFFFFF; Ogg applies none.
    expect(oggCrc32(Buffer.from('123456789'))).toBe(0x89a1897f);
    expect(oggCrc32(new Uint8Array(0))).toBe(0);
  });

  it('laces packets of 255 bytes with a terminating zero segment', () => {
    const page = oggPage([new Uint8Array(255), new Uint8Array(10)], { serial: 7, sequence: 3, granule: 960n, flags: 0 });
    expect(page[26]).toBe(3);
    expect([...page.subarray(27, 30)]).toEqual([255, 0, 10]);
    const [p] = parseOgg(page);
    expect(p.packets.map((x) => x.length)).toEqual([255, 10]);
    expect(p).toMatchObject({ serial: 7, sequence: 3, granule: 960n });
  });
});

describe('encodeOggOpus', () => {
  for (const rate of [16000, 8000]) {
    it(`writes a valid stream at ${rate} Hz that decodes back to the tone`, () => {
      const pcm = tone(2.01, rate);
      const file = encodeOggOpus(pcm, rate);
      const pages = parseOgg(file);
      expect(pages[0].flags).toBe(0x02);
      const head = pages[0].packets[0];
      expect(Buffer.from(head.subarray(0, 8)).toString('latin1')).toBe('OpusHead');
      const hv = new DataView(head.buffer, head.byteOffset);
      expect(head[9]).toBe(1);
      expect(hv.getUint16(10, true)).toBe(PRE_SKIP_48K);
      expect(hv.getUint32(12, true)).toBe(rate);
      expect(Buffer.from(pages[1].packets[0].subarray(0, 8)).toString('latin1')).toBe('OpusTags');
      expect(pages.slice(1).every((p) => !(p.flags & 0x02))).toBe(true);
      const last = pages[pages.length - 1];
      expect(last.flags & 0x04).toBe(0x04);
      expect(pages.slice(0, -1).every((p) => !(p.flags & 0x04))).toBe(true);
      expect(pages.map((p) => p.sequence)).toEqual(pages.map((_, i) => i));
      // Final granule = pre-skip + exact length at 48 kHz (players trim the last frame's padding).
      expect(last.granule).toBe(BigInt(PRE_SKIP_48K) + BigInt(Math.round((pcm.length * 48000) / rate)));
      for (let i = 3; i < pages.length; i++) expect(pages[i].granule).toBeGreaterThanOrEqual(pages[i - 1].granule);

      const dec = new opus.OpusEncoder(rate, 1);
      const packets = pages.slice(2).flatMap((p) => p.packets);
      const chunks = packets.map((p) => new Int16Array(new Uint8Array(dec.decode(Buffer.from(p))).buffer));
      const decoded = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
      let o = 0;
      for (const c of chunks) decoded.set(c, (o += c.length) - c.length);
      const skip = (PRE_SKIP_48K * rate) / 48000;
      expect(decoded.length).toBeGreaterThanOrEqual(pcm.length + skip);
      const body = decoded.subarray(skip + rate / 10, skip + pcm.length - rate / 10);
      // Same loudness as the input tone (lossy codec: within 15%).
      expect(Math.abs(rms(body) - rms(pcm)) / rms(pcm)).toBeLessThan(0.15);
    });
  }

  it('encodes real speech with the speech codec (SILK) and keeps its waveform', () => {
    // The recording encoder runs at complexity 5 for CPU (OPUS_COMPLEXITY); declared as voice it
    // stays on SILK. Left to itself below complexity 7 libopus picks CELT for this speech: 14 dB
    // where SILK keeps 19.5 (complexity 10: 20.6), so this bound catches that regression.
    const wav = parseWav(new Uint8Array(fs.readFileSync(new URL('../../fixtures/audio/caller-booking.16k.wav', import.meta.url))));
    const pcm = pcm16FromBytes(wav.data);
    const pages = parseOgg(encodeOggOpus(pcm, 16000));
    const packets = pages.slice(2).flatMap((p) => p.packets);
    // TOC configurations 0-11 are SILK-only (RFC 6716 3.1).
    expect(packets.filter((p) => p[0]! >> 3 >= 12)).toHaveLength(0);
    const dec = new opus.OpusEncoder(16000, 1);
    const decoded = Int16Array.from(packets.flatMap((p) => Array.from(new Int16Array(new Uint8Array(dec.decode(Buffer.from(p))).buffer))));
    const lag = (PRE_SKIP_48K * 16000) / 48000;
    let signal = 0;
    let error = 0;
    for (let i = 2000; i < pcm.length - 2000; i++) {
      signal += pcm[i]! ** 2;
      error += (decoded[i + lag]! - pcm[i]!) ** 2;
    }
    expect(10 * Math.log10(signal / error)).toBeGreaterThan(18);
  });

  it('resamples rates libopus does not take (22.05 kHz) and keeps the input rate in OpusHead', () => {
    const file = encodeOggOpus(tone(0.5, 22050), 22050);
    const pages = parseOgg(file);
    expect(new DataView(pages[0].packets[0].buffer, pages[0].packets[0].byteOffset).getUint32(12, true)).toBe(22050);
    expect(pages[pages.length - 1].granule).toBe(BigInt(PRE_SKIP_48K + 24000));
  });

  it('encodes an empty turn as a valid, silent stream', () => {
    const pages = parseOgg(encodeOggOpus(new Int16Array(0), 16000));
    expect(pages.length).toBe(3);
    expect(pages[2].granule).toBe(BigInt(PRE_SKIP_48K));
  });
});

describe('batch packing', () => {
  it('round-trips PCM jobs and byte results through one buffer each', () => {
    const jobs = [
      { samples: Int16Array.from([1, -2, 3]), sampleRateHz: 16000 },
      { samples: new Int16Array(0), sampleRateHz: 8000 },
      { samples: Int16Array.from([32767, -32768]), sampleRateHz: 8000 },
    ];
    const back = unpackPcmBatch(packPcmBatch(jobs));
    expect(back.map((j) => [j.sampleRateHz, [...j.samples]])).toEqual(jobs.map((j) => [j.sampleRateHz, [...j.samples]]));
    const bytes = [Uint8Array.from([1, 2]), new Uint8Array(0), Uint8Array.from([9])];
    expect(unpackBytesBatch(packBytesBatch(bytes)).map((b) => [...b])).toEqual([[1, 2], [], [9]]);
    const out = unpackBytesBatch(encodePackedBatch(packPcmBatch([{ samples: tone(0.1, 16000), sampleRateHz: 16000 }])));
    expect(parseOgg(out[0]).length).toBe(3);
  });
});

describe('audio store with the piscina worker', () => {
  let dir: string;
  let workerFile: string;

  beforeAll(() => {
    // vitest runs sources; piscina needs compiled JS: transpile the worker and its imports to a
    // temp dir whose node_modules points at the project's (what `npm run build` does for dist/).
    dir = transpileToTemp(['media-engine/workers/opus-encode.ts', 'media-engine/workers/ogg-opus.ts', 'media-engine/audio/resampler.ts', 'media-engine/audio/resampler-design.ts'], 'vp-opus-');
    workerFile = path.join(dir, 'media-engine/workers/opus-encode.js');
  });

  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('encodes batches in the worker and writes <day>/<message_id>.ogg atomically', async () => {
    const dataDir = path.join(dir, 'data');
    const store = createAudioStore({ dataDir, logger: captureLogger().logger, workerFile, maxPending: 8, batchMaxJobs: 3 });
    expect(store.stats().mode).toBe('worker');
    const done: Array<string | undefined> = [];
    const at = Date.UTC(2026, 10, 22, 23, 59);
    for (let i = 0; i < 5; i++) {
      const samples = tone(0.3, 16000);
      expect(store.save({ messageId: `0190a000-0000-7000-8000-00000000000${i}`, samples, sampleRateHz: 16000, atMs: at }, (p) => done.push(p))).toBe(true);
    }
    await store.idle();
    expect(done.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `2026-11-22/0190a000-0000-7000-8000-00000000000${i}.ogg`));
    for (const rel of done) parseOgg(new Uint8Array(fs.readFileSync(store.resolve(rel!))));
    expect(fs.readdirSync(path.join(dataDir, 'audio/2026-11-22')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(store.stats()).toMatchObject({ written: 5, failed: 0, pending: 0, pendingBytes: 0 });
    await store.close();
    await store.close();
    expect(store.save({ messageId: 'x', samples: tone(0.1, 16000), sampleRateHz: 16000, atMs: at }, () => {})).toBe(false);
  });

  it('refuses new audio beyond its bound (never blocks the caller)', async () => {
    const store = createAudioStore({ dataDir: path.join(dir, 'data2'), logger: captureLogger().logger, workerFile, maxPending: 2 });
    const results = [0, 1, 2, 3].map((i) => store.save({ messageId: `0190a000-0000-7000-8000-00000000001${i}`, samples: tone(0.2, 16000), sampleRateHz: 16000, atMs: 0 }, () => {}));
    expect(results).toEqual([true, true, false, false]);
    expect(store.stats().refused).toBe(2);
    await store.close();
    // The byte bound too: one 1 s turn (32 KB) fits a 40 KB budget, a second does not.
    const small = createAudioStore({ dataDir: path.join(dir, 'data2b'), logger: captureLogger().logger, workerFile, maxPendingBytes: 40_000 });
    const second = [0, 1].map((i) => small.save({ messageId: `0190a000-0000-7000-8000-00000000003${i}`, samples: tone(1, 16000), sampleRateHz: 16000, atMs: 0 }, () => {}));
    expect(second).toEqual([true, false]);
    await small.close();
  });

  it('falls back to inline encoding when no compiled worker exists (sources)', async () => {
    const store = createAudioStore({ dataDir: path.join(dir, 'data3'), logger: captureLogger().logger });
    expect(store.stats().mode).toBe('inline');
    let rel: string | undefined;
    store.save({ messageId: '0190a000-0000-7000-8000-000000000020', samples: tone(0.2, 8000), sampleRateHz: 8000, atMs: 0 }, (p) => (rel = p));
    await store.idle();
    expect(rel).toBe('1970-01-01/0190a000-0000-7000-8000-000000000020.ogg');
    await store.close();
  });
});
