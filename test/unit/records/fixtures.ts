/**
 * Fixtures for the record writer's tests (unit and integration): turn records shaped exactly like
 * the ones `CallActor.completeTurn` hands to its recorder, and a pausable TCP proxy to take the
 * database away from a writer mid-call.
 */
import net from 'node:net';
import type { TurnRecord, CallEndRecord } from '../../../media-engine/session/recorder.js';

/** A turn with plausible telemetry: ASR 180 ms, LLM TTFB 320 ms, one tool step when `tool`, TTS 140 ms. */
export function turnRecord(turn: number, opts: { tool?: boolean; audioSeconds?: number; startedAtMs?: number; interrupted?: boolean } = {}): TurnRecord {
  const steps = opts.tool
    ? [
        { step: 1, llm_ttfb_ms: 250, llm_total_ms: 400, tool_ms: 90, tools: ['get_weather'] },
        { step: 2, llm_ttfb_ms: 210, llm_total_ms: 380, tool_ms: 0, tools: [] },
      ]
    : [{ step: 1, llm_ttfb_ms: 320, llm_total_ms: 610, tool_ms: 0, tools: [] }];
  const asr = 180;
  const tts = 140;
  const tool = opts.tool ? 90 : 0;
  const llmBeforeAudio = opts.tool ? 400 + 210 : 320;
  const overhead = 35;
  const total = asr + llmBeforeAudio + tool + tts + overhead;
  const samples = opts.audioSeconds ? new Int16Array(Math.round(16000 * opts.audioSeconds)) : undefined;
  if (samples) for (let i = 0; i < samples.length; i++) samples[i] = Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / 16000));
  return {
    turn,
    user_text: `caller says thing ${turn}`,
    assistant_text: `agent answers thing ${turn}`,
    interrupted: opts.interrupted ?? false,
    timing: {
      asr_ms: asr,
      llm_ttfb_ms: steps[0].llm_ttfb_ms,
      llm_total_ms: steps.reduce((a, s) => a + s.llm_total_ms, 0),
      tool_ms: tool,
      tts_ttfb_ms: tts,
      total_ms: total,
      internal_overhead_ms: overhead,
      interrupted: opts.interrupted ?? false,
      steps,
    },
    asr: { provider: 'sim', model: 'sim-asr', confidence: 0.93 },
    llm: { provider: 'sim', model: 'sim-llm', tokens_input: 40 + turn, tokens_output: 12 },
    tts: { provider: 'sim' },
    tool_calls: opts.tool
      ? [
          {
            id: `sess:${turn}:call_${turn}`,
            tool_call_id: `call_${turn}`,
            tool_name: 'get_weather',
            tool_input: { city: 'Paris' },
            tool_output: { forecast: { summary: 'sunny and mild', detail: 'x'.repeat(500) } },
            status: 'success',
            latency_ms: 90,
          },
        ]
      : [],
    user_audio: samples,
    started_at_ms: opts.startedAtMs ?? Date.now(),
  };
}

export function endRecord(turns: number, startedAtMs: number, status: 'completed' | 'failed' = 'completed'): CallEndRecord {
  return { status, reason: status === 'failed' ? 'error' : 'client_disconnected', total_turns: turns, total_duration_ms: 12_345, avg_response_latency_ms: 675, ended_at_ms: startedAtMs + 12_345 };
}

const COMMIT_COMPLETE = Buffer.from('COMMIT\0', 'latin1');

/**
 * A TCP proxy in front of Postgres. `pause()` drops every open connection and stops listening, so
 * new connections are refused as by a stopped server (postgres.js fails fast on ECONNREFUSED; a
 * socket accepted and then closed makes it reconnect silently instead); `resume()` listens on the
 * same port again. `dropAll()` is a blip: open connections die, new ones work. `trapCommits(n)`
 * swallows the server's answer to the next `n` COMMITs and drops that connection: the transaction
 * is committed but the client never hears it (the retried write must then be a no-op).
 */
export class TcpProxy {
  private readonly conns = new Set<net.Socket>();
  private commitTraps = 0;
  /** COMMITs whose acknowledgement was swallowed. */
  trappedCommits = 0;
  private server: net.Server;
  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  private static listen(target: { host: string; port: number }, proxy: () => TcpProxy, port: number): Promise<net.Server> {
    const server = net.createServer((client) => {
      const p = proxy();
      const upstream = net.connect(target.port, target.host);
      p.conns.add(client);
      p.conns.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        p.conns.delete(client);
        p.conns.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        // CommandComplete ('C') carrying the tag "COMMIT": the transaction is durable server-side.
        if (p.commitTraps > 0 && chunk.includes(COMMIT_COMPLETE)) {
          p.commitTraps--;
          p.trappedCommits++;
          return drop();
        }
        client.write(chunk);
      });
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve(server));
    });
  }

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const target = { host: targetHost, port: targetPort };
    let proxy: TcpProxy | undefined;
    const server = await TcpProxy.listen(target, () => proxy!, 0);
    proxy = new TcpProxy(target, (server.address() as net.AddressInfo).port, server);
    return proxy;
  }

  async pause(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.dropAll();
    await closed;
  }

  trapCommits(n: number): void {
    this.commitTraps += n;
  }

  dropAll(): void {
    for (const s of [...this.conns]) s.destroy();
    this.conns.clear();
  }

  async resume(): Promise<void> {
    if (this.server.listening) return;
    this.server = await TcpProxy.listen(this.target, () => this, this.port);
  }

  async close(): Promise<void> {
    if (this.server.listening) await this.pause();
    this.dropAll();
  }
}
