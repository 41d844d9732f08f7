/**
 * Browser audio for one call: microphone capture (AudioWorklet `vp-capture`, 16 kHz 16-bit mono,
 * 20 ms frames) and agent playback (`vp-player`, small jitter buffer) through a gain node that
 * ducks on barge-in. This is the part of the console customers copy (docs/browser-client.md).
 */

declare const __WORKLET_URL__: string;

export interface CaptureFrame {
  pcm: Int16Array;
  rms: number;
  /** performance.now() when the frame reached the page. */
  at: number;
}

export interface AudioCallbacks {
  /** One 20 ms mic frame (already silence when muted). */
  onFrame(f: CaptureFrame): void;
  /** Playback of agent audio began (after the jitter buffer filled). */
  onPlaybackStarted(): void;
  /** The audio queued after `mark(id)` reaches the speakers: performance.now() of the moment it is heard. */
  onMark(id: number, heardAt: number): void;
  /** The playback queue drained (or was flushed). */
  onDrained(flushed: boolean): void;
}

/** Ducked playback level while the caller may be barging in. */
const DUCK_GAIN = 0.25;
const RAMP_S = 0.03;
/** Recording of what was heard is bounded (tests and "save what I heard"). */
const MAX_RECORD_S = 120;

export class CallAudio {
  readonly ctx: AudioContext;
  private stream?: MediaStream;
  private capture?: AudioWorkletNode;
  private player?: AudioWorkletNode;
  private gain?: GainNode;
  private tap?: AudioWorkletNode;
  private recorded: Float32Array[] = [];
  private recordedLen = 0;
  muted = false;

  private constructor(private readonly cb: AudioCallbacks) {
    this.ctx = new AudioContext({ latencyHint: 'interactive' });
  }

  /**
   * Opens the microphone. `headset`: no echo cancellation, noise suppression or gain control
   * (nothing to cancel, and they distort); with speakers the browser's echo canceller stays on.
   */
  static async open(cb: AudioCallbacks, opts: { headset: boolean; record: boolean }): Promise<CallAudio> {
    const a = new CallAudio(cb);
    try {
      await a.ctx.audioWorklet.addModule(__WORKLET_URL__);
      const raw = !opts.headset ? {} : { echoCancellation: false, noiseSuppression: false, autoGainControl: false };
      a.stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, ...raw } });
      a.wire(opts.record);
      if (a.ctx.state === 'suspended') await a.ctx.resume();
      return a;
    } catch (err) {
      await a.close();
      throw err;
    }
  }

  private wire(record: boolean): void {
    const ctx = this.ctx;
    const src = ctx.createMediaStreamSource(this.stream!);
    this.capture = new AudioWorkletNode(ctx, 'vp-capture', { numberOfInputs: 1, numberOfOutputs: 0, channelCount: 1, channelCountMode: 'explicit' });
    src.connect(this.capture);
    this.capture.port.onmessage = (e: MessageEvent<{ pcm: Int16Array; rms: number }>) => {
      const { pcm, rms } = e.data;
      if (this.muted) pcm.fill(0);
      this.cb.onFrame({ pcm, rms: this.muted ? 0 : rms, at: performance.now() });
    };
    this.player = new AudioWorkletNode(ctx, 'vp-player', { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
    this.gain = ctx.createGain();
    this.player.connect(this.gain);
    let out: AudioNode = this.gain;
    if (record) {
      this.tap = new AudioWorkletNode(ctx, 'vp-tap', { numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1] });
      this.tap.port.onmessage = (e: MessageEvent<Float32Array>) => {
        if (this.recordedLen + e.data.length > MAX_RECORD_S * ctx.sampleRate) return;
        this.recorded.push(e.data);
        this.recordedLen += e.data.length;
      };
      this.gain.connect(this.tap);
      out = this.tap;
    }
    out.connect(ctx.destination);
    this.player.port.onmessage = (e: MessageEvent<{ type: string; t: number; id?: number; flushed?: boolean }>) => {
      if (e.data.type === 'started') this.cb.onPlaybackStarted();
      else if (e.data.type === 'mark') this.cb.onMark(e.data.id!, this.heardAt(e.data.t));
      else if (e.data.type === 'drained') this.cb.onDrained(Boolean(e.data.flushed));
    };
  }

  /** Maps a context time to performance.now() of the moment it leaves the speakers. */
  private heardAt(contextTime: number): number {
    const ts = this.ctx.getOutputTimestamp();
    const base = ts.performanceTime !== undefined && ts.contextTime !== undefined ? ts.performanceTime + (contextTime - ts.contextTime) * 1000 : performance.now();
    const latency = Number.isFinite(this.ctx.outputLatency) ? this.ctx.outputLatency : 0;
    return base + latency * 1000;
  }

  /** Agent audio from the socket (16 kHz 16-bit LE mono; a leading RIFF header is stripped). */
  play(data: ArrayBuffer): void {
    let buf = data;
    if (buf.byteLength >= 44 && new TextDecoder().decode(new Uint8Array(buf, 0, 4)) === 'RIFF') buf = buf.slice(44);
    if (buf.byteLength < 2) return;
    const pcm = new Int16Array(buf.slice(0, buf.byteLength - (buf.byteLength % 2)));
    this.player?.port.postMessage({ pcm }, [pcm.buffer]);
  }

  /** Marks the current end of the queue: `onMark(id)` fires when what follows starts playing. */
  mark(id: number): void {
    this.player?.port.postMessage({ mark: id });
  }

  /** Barge-in, step 1 (`user_started_speaking`): lower the agent's voice. */
  duck(): void {
    this.rampTo(DUCK_GAIN);
  }

  /** Step 2 (`interim_transcription`): cut it and drop what is queued. */
  flush(): void {
    this.player?.port.postMessage({ flush: true });
    this.rampTo(1);
  }

  /** Step 3 (`phase_idle`, or no interim text within ~2 s): back to full volume. */
  restore(): void {
    this.rampTo(1);
  }

  private rampTo(v: number): void {
    if (!this.gain) return;
    const now = this.ctx.currentTime;
    this.gain.gain.cancelScheduledValues(now);
    this.gain.gain.setValueAtTime(this.gain.gain.value, now);
    this.gain.gain.linearRampToValueAtTime(v, now + RAMP_S);
  }

  /** What reached the speakers so far, as a 16-bit mono WAV at the context rate. */
  recording(): Blob {
    const rate = this.ctx.sampleRate;
    const out = new DataView(new ArrayBuffer(44 + this.recordedLen * 2));
    const str = (o: number, s: string) => [...s].forEach((c, i) => out.setUint8(o + i, c.charCodeAt(0)));
    str(0, 'RIFF');
    out.setUint32(4, 36 + this.recordedLen * 2, true);
    str(8, 'WAVEfmt ');
    out.setUint32(16, 16, true);
    out.setUint16(20, 1, true);
    out.setUint16(22, 1, true);
    out.setUint32(24, rate, true);
    out.setUint32(28, rate * 2, true);
    out.setUint16(32, 2, true);
    out.setUint16(34, 16, true);
    str(36, 'data');
    out.setUint32(40, this.recordedLen * 2, true);
    let o = 44;
    for (const chunk of this.recorded) for (const s of chunk) (out.setInt16(o, Math.round(Math.max(-1, Math.min(1, s)) * 32767), true), (o += 2));
    return new Blob([out.buffer], { type: 'audio/wav' });
  }

  /** Stops the microphone (the call ended); playback and the recording stay available. */
  async stopMic(): Promise<void> {
    this.stream?.getTracks().forEach((t) => t.stop());
    this.capture?.disconnect();
  }

  async close(): Promise<void> {
    this.stream?.getTracks().forEach((t) => t.stop());
    this.capture?.disconnect();
    this.player?.disconnect();
    if (this.ctx.state !== 'closed') await this.ctx.close();
  }
}
