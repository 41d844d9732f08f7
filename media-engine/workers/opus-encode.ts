/**
 * piscina worker: a batch of turns' PCM in, their Ogg/Opus files out (~50 us of libopus per
 * 20 ms frame, so a 10 s turn is ~25 ms of CPU: worth a thread, never worth a per-frame hop).
 * Input and output are single packed buffers (layout in ogg-opus.ts) moved, not copied, both ways.
 *
 * Must run as compiled JS (`dist/media-engine/workers/opus-encode.js` after `npm run build`):
 * worker threads get no TypeScript loader. See media-engine/records/NOTES.md.
 */
import { move } from 'piscina';
import { encodePackedBatch } from './ogg-opus.js';

export default function encodeBatch(packed: ArrayBuffer): unknown {
  return move(encodePackedBatch(packed));
}
