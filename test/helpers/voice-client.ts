/**
 * A simulated browser caller: a real WebSocket client that streams 16 kHz PCM in 20 ms frames in
 * real time (silence, or `sim`-coded speech from `say()`), records every server event, and decodes
 * the agent's audio with the sim decoder so tests can assert what the caller actually heard.
 */
import WebSocket from 'ws';
import { encodeText, SimDecoder } from '../../shared/providers/sim/codec.js';

export interface ReceivedEvent {
  type: string;
  server_ts: number;
  [k: string]: unknown;
  /** Local receive time (performance.now). */
  at: number;
  /** Agent audio frames received before this event. */
  audioFramesBefore: number;
}

export class VoiceClient {
  readonly events: ReceivedEvent[] = [];
  audioFrames = 0;
  audioFrameTimes: number[] = [];
  heard: string[] = [];
  /** The agent's audio frames as received (only with `keepAudio`). */
  readonly audio: Int16Array[] = [];
  private keepAudio = false;
  closeCode?: number;
  private ws!: WebSocket;
  private outQueue: Int16Array[] = [];
  private timer?: NodeJS.Timeout;
  private decoder = new SimDecoder(16000);
  private waiters: Array<{ pred: (e: ReceivedEvent) => boolean; resolve: (e: ReceivedEvent) => void }> = [];
  private closedP!: Promise<number>;
  private sendAudio = true;

  static async connect(url: string, opts: { sendAudio?: boolean; keepAudio?: boolean } = {}): Promise<VoiceClient> {
    const c = new VoiceClient();
    c.sendAudio = opts.sendAudio ?? true;
    c.keepAudio = opts.keepAudio ?? false;
    await c.open(url);
    return c;
  }

  private open(url: string): Promise<void> {
    this.ws = new WebSocket(url);
    this.ws.binaryType = 'nodebuffer';
    this.closedP = new Promise((resolve) => {
      this.ws.on('close', (code) => {
        this.closeCode = code;
        if (this.timer) clearInterval(this.timer);
        resolve(code);
      });
    });
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) {
        this.audioFrames++;
        this.audioFrameTimes.push(performance.now());
        const pcm = new Int16Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
        if (this.keepAudio) this.audio.push(pcm);
        this.decoder.push(pcm);
        for (const ev of this.decoder.takeEvents()) if (ev.type === 'final') this.heard.push(ev.text);
        return;
      }
      const ev = { ...(JSON.parse(data.toString('utf8')) as Record<string, unknown>), at: performance.now(), audioFramesBefore: this.audioFrames } as ReceivedEvent;
      this.events.push(ev);
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(ev)) return true;
        w.resolve(ev);
        return false;
      });
    });
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => {
        if (this.sendAudio) this.startStreaming();
        resolve();
      });
      this.ws.once('error', reject);
    });
  }

  /** Streams one 20 ms frame every 20 ms: queued speech, else silence (clients never gate audio). */
  private startStreaming(): void {
    const silence = new Int16Array(320);
    let next = performance.now();
    this.timer = setInterval(() => {
      // Catch up if the timer slipped, so the stream stays real-time on average.
      while (performance.now() >= next) {
        const frame = this.outQueue.shift() ?? silence;
        if (this.ws.readyState === WebSocket.OPEN) this.ws.send(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
        next += 20;
      }
    }, 5);
  }

  /** Queues `text` as sim-coded caller speech (plus trailing silence). Resolves when fully sent. */
  say(text: string): Promise<void> {
    const pcm = encodeText(text, 16000);
    for (let i = 0; i < pcm.length; i += 320) {
      const f = new Int16Array(320);
      f.set(pcm.subarray(i, Math.min(i + 320, pcm.length)));
      this.outQueue.push(f);
    }
    const frames = this.outQueue.length;
    return new Promise((resolve) => setTimeout(resolve, frames * 20 + 40));
  }

  /** Sends arbitrary PCM (e.g. a WAV fixture) as caller audio. */
  play(pcm: Int16Array): void {
    for (let i = 0; i < pcm.length; i += 320) {
      const f = new Int16Array(320);
      f.set(pcm.subarray(i, Math.min(i + 320, pcm.length)));
      this.outQueue.push(f);
    }
  }

  sendJson(msg: unknown): void {
    this.ws.send(JSON.stringify(msg));
  }

  sendRaw(data: Buffer | string): void {
    this.ws.send(data);
  }

  /** Resolves with the first event (already received or future) matching `pred`. */
  waitFor(pred: (e: ReceivedEvent) => boolean, timeoutMs = 15_000, from = 0): Promise<ReceivedEvent> {
    const found = this.events.slice(from).find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve: (e: ReceivedEvent) => (clearTimeout(t), resolve(e)) };
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out waiting for event; got: ${this.events.map((e) => e.type).join(',')}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  waitForType(type: string, timeoutMs?: number, from = 0): Promise<ReceivedEvent> {
    return this.waitFor((e) => e.type === type, timeoutMs, from);
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }

  closed(timeoutMs = 15_000): Promise<number> {
    return Promise.race([this.closedP, new Promise<number>((_, reject) => setTimeout(() => reject(new Error('socket did not close')), timeoutMs))]);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.ws.close();
  }
}
