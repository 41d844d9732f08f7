/**
 * The fake microphone of browser tests: a WAV that Chromium plays as capture input
 * (`--use-file-for-fake-audio-capture=<file>%noloop`, once, from the moment the page opens the
 * microphone). `sim`-coded phrases are placed at fixed offsets, silence between them; and the
 * way back: decoding `sim`-coded speech from a WAV the page recorded.
 */
import fs from 'node:fs';
import { encodeText, SimDecoder } from '../../shared/providers/sim/codec.js';
import { parseWav, pcm16FromBytes, wavHeader } from './wav.js';

const RATE = 16000;

export interface Utterance {
  atMs: number;
  text: string;
}

/** Writes a 16 kHz mono WAV of `totalMs` with the utterances at their offsets. */
export function writeFakeMicWav(file: string, utterances: Utterance[], totalMs: number): void {
  const pcm = new Int16Array((RATE * totalMs) / 1000);
  for (const u of utterances) {
    const code = encodeText(u.text, RATE);
    const at = Math.round((RATE * u.atMs) / 1000);
    if (at + code.length > pcm.length) throw new Error(`"${u.text}" at ${u.atMs} ms does not fit in ${totalMs} ms`);
    pcm.set(code, at);
  }
  const body = new Uint8Array(pcm.buffer);
  fs.writeFileSync(file, Buffer.concat([wavHeader(body.length, RATE), body]));
}

/**
 * The phrases a page's recording (16-bit mono WAV at the audio context's rate, e.g. 48 kHz)
 * carries, decoded with the `sim` decoder after a box-filter decimation to 16 kHz (the code's
 * tones are all below 3 kHz).
 */
export function decodeSimWav(buf: Uint8Array): string[] {
  const wav = parseWav(buf);
  if (wav.format !== 'pcm16' || wav.channels !== 1) throw new Error(`unexpected recording: ${wav.format} x${wav.channels}`);
  const src = pcm16FromBytes(wav.data);
  const step = wav.sampleRateHz / RATE;
  const out = new Int16Array(Math.floor(src.length / step));
  for (let i = 0; i < out.length; i++) {
    const from = Math.floor(i * step);
    const to = Math.max(from + 1, Math.floor((i + 1) * step));
    let sum = 0;
    for (let k = from; k < to && k < src.length; k++) sum += src[k]!;
    out[i] = Math.round(sum / (to - from));
  }
  const dec = new SimDecoder(RATE);
  const heard: string[] = [];
  for (let i = 0; i < out.length; i += 320) {
    dec.push(out.subarray(i, Math.min(i + 320, out.length)));
    for (const ev of dec.takeEvents()) if (ev.type === 'final') heard.push(ev.text);
  }
  return heard;
}
