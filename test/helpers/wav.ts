/**
 * Minimal WAV (RIFF/WAVE) reading and writing for the formats the engine speaks (test fixtures
 * only; the engine itself never reads WAV):
 * 16-bit PCM, G.711 mu-law and A-law. Layout and gotchas: docs/protocols.md section 10.
 *
 * Parsing walks the chunk list instead of assuming data at byte 44: real files carry LIST/fact
 * chunks, 18- or 40-byte fmt chunks, pad bytes after odd chunks, and streaming writers leave
 * 0 or 0xFFFFFFFF in size fields.
 */

import { encodeWav, parseWavChannels } from '../../shared/providers/audio/wav.js';

export type WavFormat = 'pcm16' | 'mulaw' | 'alaw';

export interface ParsedWav {
  format: WavFormat;
  sampleRateHz: number;
  channels: number;
  /** A view into the input buffer (no copy), trimmed to whole sample frames. */
  data: Uint8Array;
}

const FORMAT_PCM = 1;
const FORMAT_ALAW = 6;
const FORMAT_MULAW = 7;
const FORMAT_EXTENSIBLE = 0xfffe;
/** Size fields streaming writers leave when they cannot seek back to patch them. */
const STREAMING_SIZE_ZERO = 0;
const STREAMING_SIZE_MAX = 0xffffffff;

function fourCc(buf: Uint8Array, offset: number): string {
  return String.fromCharCode(buf[offset]!, buf[offset + 1]!, buf[offset + 2]!, buf[offset + 3]!);
}

function isRiffWave(buf: Uint8Array): boolean {
  return buf.length >= 12 && fourCc(buf, 0) === 'RIFF' && fourCc(buf, 8) === 'WAVE';
}

function formatFromCode(code: number, bitsPerSample: number): WavFormat {
  if (code === FORMAT_PCM && bitsPerSample === 16) return 'pcm16';
  if (code === FORMAT_MULAW && bitsPerSample === 8) return 'mulaw';
  if (code === FORMAT_ALAW && bitsPerSample === 8) return 'alaw';
  throw new Error(`WAV: unsupported format code ${code} with ${bitsPerSample} bits per sample`);
}

/** Parses a WAV file held in memory. Throws an Error naming the problem on anything malformed. */
export function parseWav(buf: Uint8Array): ParsedWav {
  if (buf.length < 12) throw new Error(`WAV: ${buf.length} bytes is too short for a RIFF header`);
  if (fourCc(buf, 0) !== 'RIFF') throw new Error('WAV: missing "RIFF" signature');
  if (fourCc(buf, 8) !== 'WAVE') throw new Error('WAV: RIFF file is not of form "WAVE"');
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);

  const riffSize = view.getUint32(4, true);
  // Trust the RIFF size only when it is plausible; a streaming or truncated file runs to the end.
  const riffEnd =
    riffSize === STREAMING_SIZE_ZERO || riffSize === STREAMING_SIZE_MAX || 8 + riffSize > buf.length
      ? buf.length
      : 8 + riffSize;

  let fmt: { code: number; channels: number; sampleRateHz: number; blockAlign: number; bits: number } | undefined;
  let dataStart = -1;
  let dataEnd = -1;
  let offset = 12;
  while (offset + 8 <= riffEnd && (fmt === undefined || dataStart < 0)) {
    const id = fourCc(buf, offset);
    const size = view.getUint32(offset + 4, true);
    const bodyStart = offset + 8;
    if (id === 'data') {
      dataStart = bodyStart;
      const streaming = size === STREAMING_SIZE_ZERO || size === STREAMING_SIZE_MAX;
      // A streaming or over-long data size means "the rest of the file".
      dataEnd = streaming || bodyStart + size > riffEnd ? riffEnd : bodyStart + size;
      if (dataEnd === riffEnd) break;
      offset = dataEnd + (size & 1);
      continue;
    }
    if (bodyStart + size > riffEnd) {
      throw new Error(`WAV: chunk "${id}" at byte ${offset} claims ${size} bytes, past the end of the file`);
    }
    if (id === 'fmt ') {
      if (size < 16) throw new Error(`WAV: fmt chunk is ${size} bytes, need at least 16`);
      let code = view.getUint16(bodyStart, true);
      const channels = view.getUint16(bodyStart + 2, true);
      const sampleRateHz = view.getUint32(bodyStart + 4, true);
      const blockAlign = view.getUint16(bodyStart + 12, true);
      const bits = view.getUint16(bodyStart + 14, true);
      if (code === FORMAT_EXTENSIBLE) {
        // WAVE_FORMAT_EXTENSIBLE: the real format code is the first 2 bytes of the SubFormat GUID.
        if (size < 40) throw new Error(`WAV: extensible fmt chunk is ${size} bytes, need 40`);
        code = view.getUint16(bodyStart + 24, true);
      }
      if (channels < 1) throw new Error('WAV: fmt chunk declares 0 channels');
      if (sampleRateHz < 1) throw new Error('WAV: fmt chunk declares a sample rate of 0');
      fmt = { code, channels, sampleRateHz, blockAlign, bits };
    }
    // LIST, fact, cue, bext, ... are skipped. Odd-sized chunks are followed by a pad byte.
    offset = bodyStart + size + (size & 1);
  }

  if (fmt === undefined) throw new Error('WAV: no "fmt " chunk found');
  if (dataStart < 0) throw new Error('WAV: no "data" chunk found');
  const format = formatFromCode(fmt.code, fmt.bits);
  const frameBytes = fmt.channels * (format === 'pcm16' ? 2 : 1);
  // A file cut mid-sample (common with streaming writers) keeps only whole sample frames.
  const usableBytes = dataEnd - dataStart - ((dataEnd - dataStart) % frameBytes);
  return {
    format,
    sampleRateHz: fmt.sampleRateHz,
    channels: fmt.channels,
    data: buf.subarray(dataStart, dataStart + usableBytes),
  };
}

/**
 * Builds a mono WAV header for `dataBytes` bytes of audio that the caller appends.
 * pcm16: the canonical 44-byte header. mulaw: 58 bytes (18-byte fmt chunk plus a `fact` chunk,
 * as G.711 WAVs should have); for an odd `dataBytes` the caller must append one pad byte.
 */
export function wavHeader(dataBytes: number, sampleRateHz: number, format: 'pcm16' | 'mulaw' = 'pcm16'): Uint8Array {
  if (!Number.isInteger(dataBytes) || dataBytes < 0 || dataBytes > 0xffffffff - 64) {
    throw new RangeError(`wavHeader: dataBytes must be a non-negative integer, got ${dataBytes}`);
  }
  if (!Number.isInteger(sampleRateHz) || sampleRateHz < 1) {
    throw new RangeError(`wavHeader: sampleRateHz must be a positive integer, got ${sampleRateHz}`);
  }
  const pcm = format === 'pcm16';
  const fmtSize = pcm ? 16 : 18;
  const factBytes = pcm ? 0 : 12;
  const headerBytes = 12 + 8 + fmtSize + factBytes + 8;
  const bytesPerSample = pcm ? 2 : 1;
  const out = new Uint8Array(headerBytes);
  const view = new DataView(out.buffer);
  const ascii = (offset: number, text: string): void => {
    for (let i = 0; i < 4; i++) out[offset + i] = text.charCodeAt(i);
  };
  ascii(0, 'RIFF');
  view.setUint32(4, headerBytes - 8 + dataBytes + (dataBytes & 1), true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  view.setUint32(16, fmtSize, true);
  view.setUint16(20, pcm ? FORMAT_PCM : FORMAT_MULAW, true);
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, sampleRateHz, true);
  view.setUint32(28, sampleRateHz * bytesPerSample, true); // byte rate
  view.setUint16(32, bytesPerSample, true); // block align
  view.setUint16(34, bytesPerSample * 8, true); // bits per sample
  let offset = 36;
  if (!pcm) {
    view.setUint16(offset, 0, true); // cbSize: no extra format bytes
    offset += 2;
    ascii(offset, 'fact');
    view.setUint32(offset + 4, 4, true);
    view.setUint32(offset + 8, dataBytes, true); // sample count (1 byte per sample)
    offset += 12;
  }
  ascii(offset, 'data');
  view.setUint32(offset + 4, dataBytes, true);
  return out;
}

/** Returns the data view of a RIFF/WAVE buffer, or `buf` itself when it has no WAV header. */
export function stripWavHeader(buf: Uint8Array): Uint8Array {
  return isRiffWave(buf) ? parseWav(buf).data : buf;
}

const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Reinterprets little-endian 16-bit PCM bytes as samples. Copy-free (a view sharing memory) when
 * the bytes start at an even offset on a little-endian host; otherwise copies. A trailing odd
 * byte is ignored.
 */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const sampleCount = bytes.byteLength >> 1;
  if (HOST_IS_LITTLE_ENDIAN && (bytes.byteOffset & 1) === 0) {
    return new Int16Array(bytes.buffer, bytes.byteOffset, sampleCount);
  }
  const out = new Int16Array(sampleCount);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < sampleCount; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Encodes 1 or 2 channels of equal length as an interleaved 16-bit PCM WAV (recordings the carrier simulators serve). */
export function encodeWavChannels(channels: Int16Array[], sampleRateHz: number): Uint8Array {
  const n = channels[0]?.length ?? 0;
  const ch = channels.length;
  const dataBytes = n * ch * 2;
  const out = new Uint8Array(44 + dataBytes);
  const v = new DataView(out.buffer);
  out.set(encodeWav(new Int16Array(0), sampleRateHz).subarray(0, 44));
  v.setUint32(4, 36 + dataBytes, true);
  v.setUint16(22, ch, true);
  v.setUint32(28, sampleRateHz * 2 * ch, true);
  v.setUint16(32, 2 * ch, true);
  v.setUint32(40, dataBytes, true);
  for (let i = 0; i < n; i++) for (let c = 0; c < ch; c++) v.setInt16(44 + (i * ch + c) * 2, channels[c]![i] ?? 0, true);
  return out;
}

/**
 * A carrier simulator's recording as the dial asked for it: the test's dual-channel WAV as is, its
 * two channels mixed into one when mono was asked for (what a carrier records without its
 * dual-channel option), or MP3 bytes (not a WAV: what the transcript cannot read) when the format
 * asked for is not WAV.
 */
export function recordingAs(wav: Uint8Array, o: { channels: 1 | 2; format: string }): Uint8Array {
  if (o.format !== 'wav') return Uint8Array.from([0x49, 0x44, 0x33, 0x04, 0, 0, 0, 0, 0, 0, 0xff, 0xfb, 0x90, 0x64]);
  const { channels, sampleRateHz } = parseWavChannels(wav);
  if (o.channels === 2 || channels.length === 1) return wav;
  const mixed = new Int16Array(channels[0]!.length);
  for (let i = 0; i < mixed.length; i++) mixed[i] = Math.round(channels.reduce((sum, c) => sum + (c[i] ?? 0), 0) / channels.length);
  return encodeWavChannels([mixed], sampleRateHz);
}
