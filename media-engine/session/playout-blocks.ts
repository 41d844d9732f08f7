/**
 * Fixed-size sample blocks for the calls' playout queues, recycled through one pool per process
 * (one per block size). A queue takes blocks as TTS audio arrives and gives each back as soon as
 * it has been played, so a call holds only the audio still queued, and the process stops
 * allocating once the pool covers its calls. Why a pool: every new typed array is external memory
 * to V8, and growing each call's ring by doubling (the previous design) allocated ~20 MB/s at 400
 * calls; V8 answers external growth with full mark-compacts, which ran every 0.3-1 s and were
 * ~15 % of the engine's CPU (docs/benchmarks.md, 2026-11-29). The pool keeps at most
 * MAX_POOLED_BYTES of free blocks; more is left to the GC (rule 10: bounded by our limit).
 * Single-threaded like the rest of the engine: a block is owned by one queue or by the pool.
 */

/** Free blocks kept for reuse, all sizes together. */
export const MAX_POOLED_BYTES = 32 * 1024 * 1024;

const free = new Map<number, Int16Array[]>();
let pooledBytes = 0;

/** A block of `samples` samples (contents undefined: written before read). */
export function takeBlock(samples: number): Int16Array {
  const list = free.get(samples);
  const block = list?.pop();
  if (!block) return new Int16Array(samples);
  pooledBytes -= block.byteLength;
  return block;
}

/** Gives a block back; kept for the next taker unless the pool is full. */
export function giveBlock(block: Int16Array): void {
  if (pooledBytes + block.byteLength > MAX_POOLED_BYTES) return;
  let list = free.get(block.length);
  if (!list) free.set(block.length, (list = []));
  list.push(block);
  pooledBytes += block.byteLength;
}

/** Bytes of free blocks held by the pool now (tests, metrics). */
export function pooledBlockBytes(): number {
  return pooledBytes;
}
