/**
 * Ogg/Opus encoding of one turn's audio (RFC 7845 encapsulation, RFC 3533 pages), pure apart from
 * the libopus binding. Runs inside the `opus-encode` piscina worker (or inline when the worker is
 * not compiled, see media-engine/records/NOTES.md).
 *
 * Stream layout: page 0 = OpusHead (BOS), page 1 = OpusTags, then audio pages of up to
 * `MAX_PACKETS_PER_PAGE` 20 ms packets; the last page carries EOS. Granule positions count 48 kHz
 * samples including the encoder pre-skip; the final granule is `preSkip + length` so players trim
 * the padding of the last frame exactly.
 *
 * Batches travel as one packed buffer each way so the whole job moves to and from the worker
 * with `Piscina.move` (piscina only transfers a top-level movable value):
 *   in:  u32 count, then per job (u32 sampleRateHz, u32 samples), then every job's int16 samples
 *   out: u32 count, then per job u32 byteLength, then every job's Ogg bytes
 * All integers little-endian.
 */
import opus from '@discordjs/opus';
import { Resampler } from '../audio/resampler.js';

/** Rates libopus encodes natively; anything else is resampled to 48 kHz first. */
const OPUS_RATES = new Set([8000, 12000, 16000, 24000, 48000]);
/** Encoder lookahead at 48 kHz (Fs/400 + Fs/250 of libopus): the RFC 7845 pre-skip. */
export const PRE_SKIP_48K = 312;
const FRAME_MS = 20;
/** 50 packets = 1 s of audio per page: small pages, little overhead (27 + 50 bytes per page). */
const MAX_PACKETS_PER_PAGE = 50;
/** Voice quality at 16 kHz is transparent well below this; keeps 30 days of turns small. */
export const DEFAULT_BITRATE_BPS = 24_000;
/**
 * libopus's default complexity (10) runs its signal analysis on every 20 ms frame: 256-303 us of
 * encoder time per frame at 16 kHz on the dev VM (measured 2026-11-29), and every turn of both
 * sides is encoded, so about 1.5 % of a core per call in the worker pool, more than everything
 * else a call costs. Complexity 5 with the signal declared as voice keeps the speech codec (SILK)
 * the analysis picked anyway: 127-132 us per frame, waveform SNR within 0.2-1.0 dB of the
 * default on the speech fixtures. Below 7 without the voice hint libopus switches to CELT, whose
 * SNR on the same speech is 6 dB lower (docs/benchmarks.md, "recording").
 */
export const OPUS_COMPLEXITY = 5;
/** OPUS_SET_COMPLEXITY_REQUEST and OPUS_SET_SIGNAL_REQUEST / OPUS_SIGNAL_VOICE (opus_defines.h). */
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_SIGNAL = 4024;
const OPUS_SIGNAL_VOICE = 3001;

/** The encoder every recording uses (and the bench measures): mono, `bitrateBps`, voice settings. */
export function speechEncoder(sampleRateHz: number, bitrateBps = DEFAULT_BITRATE_BPS): opus.OpusEncoder {
  const encoder = new opus.OpusEncoder(sampleRateHz, 1);
  encoder.setBitrate(bitrateBps);
  encoder.applyEncoderCTL(OPUS_SET_COMPLEXITY, OPUS_COMPLEXITY);
  encoder.applyEncoderCTL(OPUS_SET_SIGNAL, OPUS_SIGNAL_VOICE);
  return encoder;
}
const VENDOR = 'voiceplane';

// ---------------------------------------------------------------- CRC-32 (Ogg)

/** Ogg's CRC: polynomial 0x04c11db7, MSB first, initial value 0, no final xor. */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

export function oggCrc32(bytes: Uint8Array, crc = 0): number {
  for (let i = 0; i < bytes.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ bytes[i]) & 0xff]) >>> 0;
  return crc >>> 0;
}

// ---------------------------------------------------------------- Ogg pages

const HEADER_CONTINUED = 0x01;
const HEADER_BOS = 0x02;
const HEADER_EOS = 0x04;

/** Builds one Ogg page holding whole packets (none of ours exceed a page). */
export function oggPage(packets: Uint8Array[], opts: { serial: number; sequence: number; granule: bigint; flags: number }): Uint8Array {
  const lacing: number[] = [];
  let bodyLen = 0;
  for (const p of packets) {
    // A packet is laced as 255-byte segments plus a final segment < 255 (0 when a multiple of 255).
    let n = p.length;
    while (n >= 255) {
      lacing.push(255);
      n -= 255;
    }
    lacing.push(n);
    bodyLen += p.length;
  }
  if (lacing.length > 255) throw new Error(`ogg page needs ${lacing.length} lacing values (max 255)`);
  const page = new Uint8Array(27 + lacing.length + bodyLen);
  const view = new DataView(page.buffer);
  page.set([0x4f, 0x67, 0x67, 0x53], 0); // "OggS"
  page[4] = 0; // version
  page[5] = opts.flags;
  view.setBigInt64(6, opts.granule, true);
  view.setUint32(14, opts.serial >>> 0, true);
  view.setUint32(18, opts.sequence >>> 0, true);
  view.setUint32(22, 0, true); // CRC computed over the page with this field zeroed
  page[26] = lacing.length;
  page.set(lacing, 27);
  let off = 27 + lacing.length;
  for (const p of packets) {
    page.set(p, off);
    off += p.length;
  }
  view.setUint32(22, oggCrc32(page), true);
  return page;
}

export function opusHead(inputSampleRateHz: number, preSkip48k = PRE_SKIP_48K): Uint8Array {
  const b = new Uint8Array(19);
  const v = new DataView(b.buffer);
  b.set(Buffer.from('OpusHead', 'latin1'), 0);
  b[8] = 1; // version
  b[9] = 1; // mono
  v.setUint16(10, preSkip48k, true);
  v.setUint32(12, inputSampleRateHz, true);
  v.setInt16(16, 0, true); // output gain
  b[18] = 0; // channel mapping family 0 (mono/stereo)
  return b;
}

export function opusTags(vendor = VENDOR): Uint8Array {
  const vendorBytes = Buffer.from(vendor, 'utf8');
  const b = new Uint8Array(8 + 4 + vendorBytes.length + 4);
  const v = new DataView(b.buffer);
  b.set(Buffer.from('OpusTags', 'latin1'), 0);
  v.setUint32(8, vendorBytes.length, true);
  b.set(vendorBytes, 12);
  v.setUint32(12 + vendorBytes.length, 0, true); // no user comments
  return b;
}

// ---------------------------------------------------------------- encode

export interface EncodeOptions {
  /** Ogg stream serial number. Default: derived from the audio length and rate (any value is valid). */
  serial?: number;
  /** Default 24 kbit/s. */
  bitrateBps?: number;
}

/** Mono 16-bit PCM at `sampleRateHz` -> a complete Ogg/Opus file. */
export function encodeOggOpus(pcm: Int16Array, sampleRateHz: number, opts: EncodeOptions = {}): Uint8Array {
  let rate = sampleRateHz;
  let samples = pcm;
  if (!OPUS_RATES.has(rate)) {
    samples = new Resampler(rate, 48000).process(pcm);
    rate = 48000;
  }
  const frame = (rate * FRAME_MS) / 1000;
  const encoder = speechEncoder(rate, opts.bitrateBps);
  const lengthAt48k = BigInt(Math.round((samples.length * 48000) / rate));
  // Feed the lookahead's worth of extra silence so the last real samples leave the encoder.
  const lookahead = Math.ceil((PRE_SKIP_48K * rate) / 48000);
  const frames = Math.max(1, Math.ceil((samples.length + lookahead) / frame));
  const serial = opts.serial ?? ((samples.length * 2654435761) ^ rate) >>> 0;

  const pages: Uint8Array[] = [
    oggPage([opusHead(sampleRateHz)], { serial, sequence: 0, granule: 0n, flags: HEADER_BOS }),
    oggPage([opusTags()], { serial, sequence: 1, granule: 0n, flags: 0 }),
  ];
  const frameBuf = Buffer.alloc(frame * 2);
  const frameView = new Int16Array(frameBuf.buffer, frameBuf.byteOffset, frame);
  const finalGranule = BigInt(PRE_SKIP_48K) + lengthAt48k;
  let sequence = 2;
  let pending: Uint8Array[] = [];
  for (let i = 0; i < frames; i++) {
    const start = i * frame;
    frameView.fill(0);
    if (start < samples.length) frameView.set(samples.subarray(start, Math.min(start + frame, samples.length)));
    pending.push(new Uint8Array(encoder.encode(frameBuf)));
    const last = i === frames - 1;
    if (pending.length === MAX_PACKETS_PER_PAGE || last) {
      const decoded = BigInt((i + 1) * 960);
      const granule = last ? finalGranule : decoded < finalGranule ? decoded : finalGranule;
      pages.push(oggPage(pending, { serial, sequence: sequence++, granule, flags: last ? HEADER_EOS : 0 }));
      pending = [];
    }
  }
  return concat(pages);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

// ---------------------------------------------------------------- batch packing

export interface PcmJob {
  samples: Int16Array;
  sampleRateHz: number;
}

export function packPcmBatch(jobs: PcmJob[]): ArrayBuffer {
  const headerBytes = 4 + 8 * jobs.length;
  const total = headerBytes + jobs.reduce((n, j) => n + j.samples.length * 2, 0);
  const buf = new ArrayBuffer(total);
  const v = new DataView(buf);
  v.setUint32(0, jobs.length, true);
  let off = headerBytes;
  jobs.forEach((j, i) => {
    v.setUint32(4 + 8 * i, j.sampleRateHz, true);
    v.setUint32(8 + 8 * i, j.samples.length, true);
    new Int16Array(buf, off, j.samples.length).set(j.samples);
    off += j.samples.length * 2;
  });
  return buf;
}

export function unpackPcmBatch(buf: ArrayBuffer): PcmJob[] {
  const v = new DataView(buf);
  const n = v.getUint32(0, true);
  let off = 4 + 8 * n;
  const jobs: PcmJob[] = [];
  for (let i = 0; i < n; i++) {
    const sampleRateHz = v.getUint32(4 + 8 * i, true);
    const count = v.getUint32(8 + 8 * i, true);
    jobs.push({ sampleRateHz, samples: new Int16Array(buf, off, count) });
    off += count * 2;
  }
  return jobs;
}

export function packBytesBatch(items: Uint8Array[]): ArrayBuffer {
  const headerBytes = 4 + 4 * items.length;
  const buf = new ArrayBuffer(headerBytes + items.reduce((n, b) => n + b.length, 0));
  const v = new DataView(buf);
  v.setUint32(0, items.length, true);
  let off = headerBytes;
  items.forEach((b, i) => {
    v.setUint32(4 + 4 * i, b.length, true);
    new Uint8Array(buf, off, b.length).set(b);
    off += b.length;
  });
  return buf;
}

export function unpackBytesBatch(buf: ArrayBuffer): Uint8Array[] {
  const v = new DataView(buf);
  const n = v.getUint32(0, true);
  let off = 4 + 4 * n;
  const out: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const len = v.getUint32(4 + 4 * i, true);
    out.push(new Uint8Array(buf, off, len));
    off += len;
  }
  return out;
}

/** The worker's job, also run inline: packed PCM batch in, packed Ogg batch out. */
export function encodePackedBatch(packed: ArrayBuffer): ArrayBuffer {
  return packBytesBatch(unpackPcmBatch(packed).map((j) => encodeOggOpus(j.samples, j.sampleRateHz)));
}
