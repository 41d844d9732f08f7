/** Loudness of PCM for the adapters that must tell speech from silence themselves. */

/** Frame RMS that counts as voiced (int16 units; about -40 dBFS). */
export const DEFAULT_VOICED_RMS = 300;

/** Root mean square of 16-bit samples. */
export function rms(pcm: Int16Array): number {
  let acc = 0;
  for (let i = 0; i < pcm.length; i++) acc += pcm[i]! * pcm[i]!;
  return Math.sqrt(acc / Math.max(1, pcm.length));
}
