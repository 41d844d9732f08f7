/**
 * One live call: starts a session, opens the voice socket, streams the microphone after
 * `pipeline_ready`, plays the agent, applies the spec's barge-in handling, and measures on the
 * page the time from the end of the caller's speech to the first agent audio heard.
 */
import { api } from './api.js';
import { CallAudio, type CaptureFrame } from './audio.js';

/** A mic frame louder than this (RMS, full scale 1) counts as speech for the page's own clock. */
const VOICE_RMS = 0.015;
/** Restore the volume if no interim text confirms a barge-in within this long (spec). */
const DUCK_TIMEOUT_MS = 2000;

export interface TurnTiming {
  asr_ms: number;
  llm_ttfb_ms: number;
  tool_ms: number;
  tts_ttfb_ms: number;
  total_ms: number;
  internal_overhead_ms: number;
  interrupted: boolean;
}

export interface Turn {
  turn: number;
  source: 'voice' | 'text';
  user: string;
  assistant: string;
  interrupted: boolean;
  timing?: TurnTiming;
  /** End of speech (or the text sent) -> first agent audio heard, measured on this page. */
  heardMs?: number;
  /** End of speech -> the final transcript reached the page (endpointing + ASR + network). */
  finalMs?: number;
}

export interface ServerEvent {
  type: string;
  server_ts: number;
  turn?: number;
  text?: string;
  [k: string]: unknown;
}

export interface CallHooks {
  onEvent(ev: ServerEvent, atMs: number): void;
  onInterim(text: string): void;
  onTurn(t: Turn): void;
  onState(state: string): void;
  /** The agent's audio is playing (or stopped). */
  onSpeaking(on: boolean): void;
  onEnded(reason: string): void;
}

export class Call {
  readonly startedAt = performance.now();
  private ws!: WebSocket;
  private audio!: CallAudio;
  private ready = false;
  private ended = false;
  private lastVoicedAt = 0;
  private turns = new Map<number, Turn>();
  private latestTurn = -1;
  private nextOrigin?: { at: number; source: 'voice' | 'text' };
  /** Latency origins of turns whose audio is marked in the player, by turn. */
  private origins = new Map<number, number>();
  private playing = false;
  private ducked = false;
  private duckTimer?: ReturnType<typeof setTimeout>;
  sessionId = '';

  private constructor(private readonly hooks: CallHooks) {}

  static async start(agentId: string, opts: { headset: boolean; record: boolean }, hooks: CallHooks): Promise<Call> {
    const c = new Call(hooks);
    // The microphone first: it needs the click's user activation, and the socket's 30 s window starts with the session.
    c.audio = await CallAudio.open(
      {
        onFrame: (f) => c.onFrame(f),
        onPlaybackStarted: () => c.onPlaybackStarted(),
        onMark: (turn, at) => c.onHeard(turn, at),
        onDrained: () => c.onDrained(),
      },
      opts,
    );
    try {
      const s = await api.startSession(agentId);
      c.sessionId = s.session_id;
      const url = new URL(s.ws_url);
      url.searchParams.set('profile', opts.headset ? 'browser_headset' : 'browser_speakers');
      c.open(url.toString());
    } catch (err) {
      await c.audio.close();
      throw err;
    }
    return c;
  }

  private open(url: string): void {
    this.hooks.onState('connecting');
    this.ws = new WebSocket(url);
    this.ws.binaryType = 'arraybuffer';
    this.ws.onmessage = (m) => {
      if (typeof m.data !== 'string') {
        // Never play before pipeline_ready (spec).
        if (this.ready && !this.ended) this.audio.play(m.data as ArrayBuffer);
        return;
      }
      let ev: ServerEvent;
      try {
        ev = JSON.parse(m.data) as ServerEvent;
      } catch {
        return;
      }
      this.onEvent(ev);
    };
    this.ws.onclose = (e) => this.finish(e.reason || `socket closed (${e.code})`);
    this.ws.onerror = () => this.hooks.onState('socket error');
  }

  private onFrame(f: CaptureFrame): void {
    if (f.rms >= VOICE_RMS) this.lastVoicedAt = f.at;
    // Stream only after pipeline_ready, continuously (turn-taking is the server's job).
    if (this.ready && !this.ended && this.ws.readyState === WebSocket.OPEN) this.ws.send(f.pcm.buffer);
  }

  private turn(n: number): Turn {
    let t = this.turns.get(n);
    if (!t) {
      t = { turn: n, source: 'voice', user: '', assistant: '', interrupted: false };
      this.turns.set(n, t);
    }
    return t;
  }

  private onEvent(ev: ServerEvent): void {
    const at = performance.now() - this.startedAt;
    this.hooks.onEvent(ev, at);
    const n = typeof ev.turn === 'number' ? ev.turn : undefined;
    // Events of a superseded turn can still arrive: discarded by turn (spec).
    if (n !== undefined && n < this.latestTurn && ev.type !== 'turn_complete') return;
    switch (ev.type) {
      case 'pipeline_ready':
        this.ready = true;
        this.hooks.onState('live');
        break;
      case 'user_started_speaking':
        if (this.playing) {
          this.duck();
        }
        break;
      case 'interim_transcription':
        this.hooks.onInterim(String(ev.text ?? ''));
        if (this.playing || this.ducked) this.bargeIn();
        break;
      case 'transcription': {
        const t = this.turn(n!);
        t.user = String(ev.text ?? '');
        this.latestTurn = Math.max(this.latestTurn, n!);
        // Typed text comes back as a transcription too: its origin is when it was sent.
        if (this.nextOrigin?.source !== 'text') this.nextOrigin = { at: this.lastVoicedAt || performance.now(), source: 'voice' };
        t.source = this.nextOrigin.source;
        t.finalMs = Math.max(0, performance.now() - this.nextOrigin.at);
        this.hooks.onInterim('');
        this.hooks.onTurn(t);
        break;
      }
      case 'llm_start':
        if (n !== undefined) {
          this.latestTurn = Math.max(this.latestTurn, n);
          const t = this.turn(n);
          if (this.nextOrigin) t.source = this.nextOrigin.source;
        }
        break;
      case 'llm_chunk':
        if (n !== undefined) {
          const t = this.turn(n);
          t.assistant += String(ev.text ?? '');
          this.hooks.onTurn(t);
        }
        break;
      case 'llm_end':
        if (n !== undefined) {
          const t = this.turn(n);
          t.assistant = String(ev.text ?? t.assistant);
          this.hooks.onTurn(t);
        }
        break;
      case 'tts_audio_start':
        // The turn's audio follows this event on the socket: mark where it starts in the queue.
        if (n !== undefined && this.nextOrigin && !this.origins.has(n)) {
          this.origins.set(n, this.nextOrigin.at);
          this.nextOrigin = undefined;
          this.audio.mark(n);
        }
        break;
      case 'turn_complete':
        if (n !== undefined) {
          const t = this.turn(n);
          t.timing = ev.timing as TurnTiming;
          if (ev.user_text && !t.user) t.user = String(ev.user_text);
          if (ev.assistant_text) t.assistant = String(ev.assistant_text);
          if (t.timing?.interrupted) t.interrupted = true;
          this.hooks.onTurn(t);
        }
        break;
      case 'phase_idle':
        this.restore();
        break;
      case 'call_ended':
        this.finish(String(ev.reason ?? 'ended'));
        break;
      case 'error':
        // Fatal failures (unknown session, capacity, missing provider key) end the call; the socket closes next.
        if (ev.fatal) this.finish(String(ev.message ?? ev.error ?? 'error'));
        break;
    }
  }

  private duck(): void {
    this.ducked = true;
    this.audio.duck();
    clearTimeout(this.duckTimer);
    this.duckTimer = setTimeout(() => this.restore(), DUCK_TIMEOUT_MS);
  }

  private bargeIn(): void {
    clearTimeout(this.duckTimer);
    this.ducked = false;
    this.audio.flush();
    const t = this.turns.get(this.latestTurn);
    if (t && !t.interrupted) {
      t.interrupted = true;
      this.hooks.onTurn(t);
    }
    // Flushed marks never fire: their turns were not heard.
    this.origins.clear();
  }

  private restore(): void {
    clearTimeout(this.duckTimer);
    if (!this.ducked) return;
    this.ducked = false;
    this.audio.restore();
  }

  private onPlaybackStarted(): void {
    this.playing = true;
    this.hooks.onSpeaking(true);
  }

  private onHeard(turn: number, heardAt: number): void {
    const origin = this.origins.get(turn);
    if (origin === undefined) return;
    this.origins.delete(turn);
    const t = this.turn(turn);
    t.heardMs = Math.max(0, heardAt - origin);
    this.hooks.onTurn(t);
  }

  private onDrained(): void {
    this.playing = false;
    this.hooks.onSpeaking(false);
    // The speaker finished everything queued: resets the server's idle monitor (spec).
    if (this.ready && !this.ended && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: 'playback_done' }));
  }

  /** Type-to-speak: feeds the model as if spoken; the reply comes back as audio. */
  sendText(text: string): void {
    if (!this.ready || this.ended) return;
    this.nextOrigin = { at: performance.now(), source: 'text' };
    this.ws.send(JSON.stringify({ type: 'text_inject', text, role: 'user' }));
  }

  setMuted(muted: boolean): void {
    this.audio.muted = muted;
  }

  /** Closing the socket is the reliable hang-up (spec). */
  hangUp(): void {
    this.ws.close(1000, 'hang up');
    this.finish('hung up');
  }

  recording(): Blob {
    return this.audio.recording();
  }

  private finish(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.duckTimer);
    this.hooks.onState('ended');
    this.hooks.onEnded(reason);
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
    // Keep the context for "save what I heard"; the microphone stops now.
    void this.audio.stopMic();
  }

  async dispose(): Promise<void> {
    await this.audio.close();
  }
}
