/**
 * RIFF/WAVE for 16-bit PCM mono: what Flite writes and what OpenAI-compatible transcription
 * servers read. Parsing walks the chunk list (a `LIST` chunk may sit before `data`), so a header
 * longer than the canonical 44 bytes is read correctly. `parseWavChannels` also reads what carriers
 * serve as call recordings: 16-bit PCM or G.711 mu-law, mono or dual-channel (one channel per leg).
 */
import { MULAW_DECODE_TABLE } from '../tts/pcm-bytes.js';

export interface WavPcm {
  samples: Int16Array;
  sampleRateHz: number;
}

/** Encodes S16LE mono PCM as a canonical 44-byte-header WAV file. */
export function encodeWav(samples: Int16Array, sampleRateHz: number): Uint8Array {
  const dataBytes = samples.length * 2;
  const out = new Uint8Array(44 + dataBytes);
  const v = new DataView(out.buffer);
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  };
  ascii(0, 'RIFF');
  v.setUint32(4, 36 + dataBytes, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, 1, true); // mono
  v.setUint32(24, sampleRateHz, true);
  v.setUint32(28, sampleRateHz * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  ascii(36, 'data');
  v.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) v.setInt16(44 + 2 * i, samples[i]!, true);
  return out;
}

/** Parses a mono WAV (16-bit PCM or mu-law); throws a RangeError naming what is wrong otherwise. */
export function parseWav(bytes: Uint8Array): WavPcm {
  const { channels, sampleRateHz } = parseWavChannels(bytes);
  if (channels.length !== 1) throw new RangeError(`unsupported WAV: ${channels.length} channels (want mono)`);
  return { samples: channels[0]!, sampleRateHz };
}

export interface WavChannels {
  /** One PCM array per channel, de-interleaved (channel 1 first). */
  channels: Int16Array[];
  sampleRateHz: number;
}

const WAVE_PCM = 1;
const WAVE_MULAW = 7;
const WAVE_EXTENSIBLE = 0xfffe;

/**
 * Parses a 16-bit PCM or 8-bit mu-law WAV of 1 or 2 channels into PCM per channel (mu-law through
 * the shared G.711 table). Throws a RangeError naming what is wrong otherwise.
 */
export function parseWavChannels(bytes: Uint8Array): WavChannels {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
  if (bytes.byteLength < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new RangeError('not a RIFF/WAVE file');
  let at = 12;
  let fmt: { format: number; channels: number; rate: number; bits: number } | undefined;
  while (at + 8 <= bytes.byteLength) {
    const id = tag(at);
    const size = v.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.byteLength) throw new RangeError('short fmt chunk');
      let format = v.getUint16(body, true);
      // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
      if (format === WAVE_EXTENSIBLE && size >= 40 && body + 26 <= bytes.byteLength) format = v.getUint16(body + 24, true);
      fmt = { format, channels: v.getUint16(body + 2, true), rate: v.getUint32(body + 4, true), bits: v.getUint16(body + 14, true) };
      const ok = (fmt.format === WAVE_PCM && fmt.bits === 16) || (fmt.format === WAVE_MULAW && fmt.bits === 8);
      if (!ok || fmt.channels < 1 || fmt.channels > 2 || !fmt.rate) {
        throw new RangeError(`unsupported WAV format ${fmt.format}/${fmt.channels}ch/${fmt.bits}bit (want 16-bit PCM or mu-law, 1 or 2 channels)`);
      }
    } else if (id === 'data') {
      if (!fmt) throw new RangeError('data chunk before fmt chunk');
      const end = Math.min(bytes.byteLength, size > 0 && size !== 0xffffffff ? body + size : bytes.byteLength);
      const bytesPerSample = fmt.bits / 8;
      const frames = Math.floor((end - body) / (bytesPerSample * fmt.channels));
      const channels = Array.from({ length: fmt.channels }, () => new Int16Array(frames));
      for (let i = 0; i < frames; i++) {
        for (let c = 0; c < fmt.channels; c++) {
          const p = body + (i * fmt.channels + c) * bytesPerSample;
          channels[c]![i] = bytesPerSample === 2 ? v.getInt16(p, true) : MULAW_DECODE_TABLE[bytes[p]!]!;
        }
      }
      return { channels, sampleRateHz: fmt.rate };
    }
    at = body + size + (size & 1);
  }
  throw new RangeError('no data chunk');
}
