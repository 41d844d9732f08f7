/**
 * `sim` ASR: reads the in-band sim audio code (providers/sim/codec.ts) back to text. Speech and
 * noise decode to nothing, so it only "hears" callers and agents that speak through sim TTS.
 *
 * One phrase of the code is one utterance: characters arrive as `interim` events, its end marker
 * (or 300 ms without code) gives a `final` with `endOfTurn: true`.
 */
import { realClock, type Clock, type TimerHandle } from '../../clock.js';
import { MULAW_DECODE_TABLE } from '../tts/pcm-bytes.js';
import type { AsrEvent, AsrProvider, AsrStream, AsrStreamOptions } from '../types.js';
import { SimDecoder, type SimDecoderEvent } from '../sim/codec.js';

export interface SimAsrOptions {
  /** Delay between decoding something and delivering its event, as a vendor's. Default 0. */
  latencyMs?: number;
  /** Time source for `latencyMs`. Default `realClock`. */
  clock?: Clock;
}

export interface SimAsrProvider extends AsrProvider {
  /** How many streams were opened (tests count attempts with it). */
  readonly streamCount: number;
}

const SAMPLE_RATES_HZ = [8000, 16000] as const;
/**
 * Undelivered events kept per stream. Overflow drops the oldest interim (a later interim or the
 * final supersedes it); finals are never dropped, so only they can exceed the bound.
 */
const QUEUE_LIMIT = 32;

export function createSimAsr(opts: SimAsrOptions = {}): SimAsrProvider {
  const latencyMs = opts.latencyMs ?? 0;
  const clock = opts.clock ?? realClock;
  let streamCount = 0;
  return {
    label: 'sim',
    capabilities: { interim: true, acceptsMulaw: true, sampleRatesHz: [...SAMPLE_RATES_HZ] },
    stream(streamOpts: AsrStreamOptions): AsrStream {
      streamCount++;
      return new SimAsrStream(streamOpts, latencyMs, clock);
    },
    get streamCount() {
      return streamCount;
    },
  };
}

type Waiter = (result: IteratorResult<AsrEvent>) => void;

class SimAsrStream implements AsrStream {
  /**
   * Made on the first frame. The engine pushes every frame, so on a call this only defers it; a
   * stream fed nothing (the engine bench's `sim-net` gates digital silence) holds none (~17 KiB).
   */
  private decoder?: SimDecoder;
  private readonly rateHz: 8000 | 16000;
  private readonly mulaw: boolean;
  /** Decoded PCM for mu-law or byte input; grows to the largest frame seen, then is reused. */
  private scratch = new Int16Array(0);
  private readonly queue: AsrEvent[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly timers = new Set<TimerHandle>();
  private state: 'open' | 'ending' | 'closed' = 'open';

  constructor(
    opts: AsrStreamOptions,
    private readonly latencyMs: number,
    private readonly clock: Clock,
  ) {
    const rateHz = opts.sampleRateHz;
    if (rateHz !== 8000 && rateHz !== 16000) {
      throw new RangeError(`sim ASR: unsupported sample rate ${rateHz} Hz (use 8000 or 16000)`);
    }
    this.rateHz = rateHz;
    this.mulaw = opts.encoding === 'mulaw';
  }

  /**
   * `Int16Array` is PCM whatever the encoding; `Uint8Array` is mu-law bytes on a `mulaw` stream,
   * else little-endian 16-bit PCM bytes (an odd trailing byte is dropped).
   */
  push(frame: Int16Array | Uint8Array): void {
    if (this.state !== 'open') return;
    const decoder = (this.decoder ??= new SimDecoder(this.rateHz));
    if (frame instanceof Int16Array) {
      decoder.push(frame);
    } else {
      const samples = this.mulaw ? frame.length : frame.length >> 1;
      if (this.scratch.length < samples) this.scratch = new Int16Array(samples);
      // The provider library's own mu-law table (same alawmulaw values as the engine's audio/g711.ts).
      if (this.mulaw) for (let i = 0; i < samples; i++) this.scratch[i] = MULAW_DECODE_TABLE[frame[i]!]!;
      else for (let i = 0; i < samples; i++) this.scratch[i] = ((frame[2 * i]! | (frame[2 * i + 1]! << 8)) << 16) >> 16; // LE bytes
      decoder.push(this.scratch, samples);
    }
    this.deliver(decoder.takeEvents());
  }

  flush(): void {
    if (this.state !== 'open' || !this.decoder) return;
    this.decoder.flush();
    this.deliver(this.decoder.takeEvents());
  }

  end(): void {
    if (this.state !== 'open') return;
    this.flush();
    this.state = 'ending';
    this.settle();
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    for (const timer of this.timers) this.clock.clearTimeout(timer);
    this.timers.clear();
    this.queue.length = 0;
    this.decoder = undefined;
    this.settle();
  }

  [Symbol.asyncIterator](): AsyncIterator<AsrEvent> {
    return {
      next: () => this.next(),
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private next(): Promise<IteratorResult<AsrEvent>> {
    const event = this.queue.shift();
    if (event) return Promise.resolve({ value: event, done: false });
    if (this.isDone()) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Nothing more can come: closed, or ended with every delayed event delivered. */
  private isDone(): boolean {
    return this.state === 'closed' || (this.state === 'ending' && this.timers.size === 0 && this.queue.length === 0);
  }

  private deliver(events: SimDecoderEvent[]): void {
    for (const e of events) {
      const event: AsrEvent =
        e.type === 'final' ? { type: 'final', text: e.text, endOfTurn: true } : { type: 'interim', text: e.text };
      if (this.latencyMs <= 0) {
        this.enqueue(event);
        continue;
      }
      const timer = this.clock.setTimeout(() => {
        this.timers.delete(timer);
        this.enqueue(event);
        this.settle();
      }, this.latencyMs);
      this.timers.add(timer);
    }
  }

  private enqueue(event: AsrEvent): void {
    if (this.state === 'closed') return;
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter({ value: event, done: false });
      return;
    }
    this.queue.push(event);
    if (this.queue.length > QUEUE_LIMIT) {
      const oldestInterim = this.queue.findIndex((e) => e.type === 'interim');
      if (oldestInterim >= 0) this.queue.splice(oldestInterim, 1);
    }
  }

  /** Completes waiting readers once the stream is done. */
  private settle(): void {
    if (!this.isDone()) return;
    for (const waiter of this.waiters.splice(0)) waiter({ value: undefined, done: true });
  }
}
