/**
 * Flite run directly on this thread, the reference the `local` TTS (worker pool, sentence split,
 * resampling, mu-law) is compared with. Independent of flite-pool.ts on purpose: only the .wasm
 * and the WAV parser are shared.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WASI } from 'node:wasi';
import { parseWav, type WavPcm } from '../../shared/providers/audio/wav.js';
import { fliteWasmPath } from '../../shared/providers/tts/flite-pool.js';

// The project's lib settings (no DOM) leave out WebAssembly's types; the little used here:
declare const WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (mod: object, imports: object) => object };

let mod: object | undefined;

export function renderFliteDirect(text: string, voice = 'slt'): WavPcm {
  mod ??= new WebAssembly.Module(fs.readFileSync(fliteWasmPath()));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vp-flite-ref-'));
  try {
    const wasi = new WASI({ version: 'preview1', args: ['flite', '-voice', voice, '-t', text, '-o', '/out/ref.wav'], env: {}, preopens: { '/out': dir }, returnOnExit: true });
    const rc = wasi.start(new WebAssembly.Instance(mod, { wasi_snapshot_preview1: wasi.wasiImport }));
    if (rc !== 0) throw new Error(`flite exited with ${rc}`);
    return parseWav(new Uint8Array(fs.readFileSync(path.join(dir, 'ref.wav'))));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** RMS per `windowMs` window: the energy envelope, comparable across rates and codecs. */
export function energyEnvelope(samples: Int16Array, rateHz: number, windowMs = 20): Float64Array {
  const w = Math.max(1, Math.round((rateHz * windowMs) / 1000));
  const out = new Float64Array(Math.floor(samples.length / w));
  for (let i = 0; i < out.length; i++) {
    let acc = 0;
    for (let j = i * w; j < (i + 1) * w; j++) acc += samples[j]! * samples[j]!;
    out[i] = Math.sqrt(acc / w);
  }
  return out;
}

/** Pearson correlation of two equal-length series. */
export function correlation(a: Float64Array, b: Float64Array): number {
  const n = Math.min(a.length, b.length);
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a[i]!;
    mb += b[i]!;
  }
  ma /= n;
  mb /= n;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    sab += (a[i]! - ma) * (b[i]! - mb);
    saa += (a[i]! - ma) ** 2;
    sbb += (b[i]! - mb) ** 2;
  }
  return sab / Math.sqrt(saa * sbb);
}

/** The best correlation of `b` against `a` over lags 0..maxLag windows (b may start late). */
export function bestLagCorrelation(a: Float64Array, b: Float64Array, maxLag: number): { r: number; lag: number } {
  let best = { r: -1, lag: 0 };
  for (let lag = 0; lag <= maxLag && lag < b.length; lag++) {
    const r = correlation(a, b.subarray(lag, lag + a.length));
    if (r > best.r) best = { r, lag };
  }
  return best;
}
