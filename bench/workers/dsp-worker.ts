/**
 * piscina worker for bench/dsp-offload.ts: runs one DSP job over a batch of 20 ms frames and moves
 * the result back. Jobs carry no per-call filter state (a fresh resampler per job), which is what
 * offloading per-frame DSP would have to do unless calls were pinned to threads.
 */
import { move } from 'piscina';
import { mulawDecode } from '../../media-engine/audio/g711.js';
import { Resampler } from '../../media-engine/audio/resampler.js';
import { encodePackedBatch } from '../../media-engine/workers/ogg-opus.js';

export interface DspJob {
  op: 'mulaw-up' | 'tts-24k-8k' | 'ogg-opus';
  /** mulaw-up: mu-law bytes (160 per frame); tts-24k-8k: int16 PCM at 24 kHz; ogg-opus: a packed batch (ogg-opus.ts). */
  data: ArrayBuffer;
}

export default function run(job: DspJob): unknown {
  if (job.op === 'mulaw-up') {
    const bytes = new Uint8Array(job.data);
    const pcm8 = new Int16Array(bytes.length);
    mulawDecode(bytes, pcm8);
    const up = new Resampler(8000, 16000);
    const out = new Int16Array(pcm8.length * 2);
    up.processInto(pcm8, out);
    return move(out.buffer);
  }
  if (job.op === 'tts-24k-8k') {
    const pcm = new Int16Array(job.data);
    const down = new Resampler(24000, 8000);
    const out = new Int16Array(down.maxOutputFor(pcm.length));
    down.processInto(pcm, out);
    return move(out.buffer);
  }
  return move(encodePackedBatch(job.data));
}
