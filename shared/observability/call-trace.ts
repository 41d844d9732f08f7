/**
 * One trace per call: a `call` span from start to end, a `turn` span per agent reply, and under
 * each turn `asr.final`, `llm.first_token` (per LLM step), `tool.call` and `tts.first_byte`.
 * Every span of a turn is created when the turn ends, with the start and end times the actor
 * already measured (monotonic marks converted to wall time): nothing is traced while audio flows.
 */
import { ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import type { TurnObservation } from './call-telemetry.js';

export interface CallTraceClock {
  now(): number;
  monotonicMs(): number;
}

export interface CallTraceAttributes {
  sessionId: string;
  agentId: string;
  workspaceId?: string;
  transport: string;
  vendors: { asr: string; llm: string; tts: string };
}

export class CallTrace {
  private readonly span: Span;
  private readonly ctx: Context;
  /** Wall time minus monotonic time, fixed at the call's start (marks are monotonic). */
  private readonly offsetMs: number;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly clock: CallTraceClock,
    attrs: CallTraceAttributes,
  ) {
    this.offsetMs = clock.now() - clock.monotonicMs();
    this.span = tracer.startSpan('call', {
      startTime: clock.now(),
      attributes: {
        'voiceplane.session_id': attrs.sessionId,
        'voiceplane.agent_id': attrs.agentId,
        'voiceplane.workspace_id': attrs.workspaceId ?? '',
        'voiceplane.transport': attrs.transport,
        'voiceplane.asr.vendor': attrs.vendors.asr,
        'voiceplane.llm.vendor': attrs.vendors.llm,
        'voiceplane.tts.vendor': attrs.vendors.tts,
      },
    });
    this.ctx = trace.setSpan(ROOT_CONTEXT, this.span);
  }

  private wall(monoMs: number): number {
    return monoMs + this.offsetMs;
  }

  turn(t: TurnObservation): void {
    if (this.ended) return;
    const tm = t.timing;
    const turn = this.tracer.startSpan(
      'turn',
      {
        startTime: this.wall(t.originMs),
        attributes: {
          'voiceplane.turn': t.turn,
          'voiceplane.turn.interrupted': t.interrupted,
          'voiceplane.turn.total_ms': tm.total_ms,
          'voiceplane.turn.asr_ms': tm.asr_ms,
          'voiceplane.turn.llm_ttfb_ms': tm.llm_ttfb_ms,
          'voiceplane.turn.tool_ms': tm.tool_ms,
          'voiceplane.turn.tts_ttfb_ms': tm.tts_ttfb_ms,
          'voiceplane.turn.internal_overhead_ms': tm.internal_overhead_ms,
        },
      },
      this.ctx,
    );
    const inTurn = trace.setSpan(this.ctx, turn);
    const child = (name: string, startMono: number, endMono: number, attributes: Record<string, string | number> = {}, error?: string) => {
      const s = this.tracer.startSpan(name, { startTime: this.wall(startMono), attributes }, inTurn);
      if (error) s.setStatus({ code: SpanStatusCode.ERROR, message: error });
      s.end(this.wall(Math.max(startMono, endMono)));
    };
    if (t.spoken) child('asr.final', t.originMs, t.originMs + t.asrMs);
    for (const s of t.steps) {
      const start = t.stepStartedAt[s.step - 1];
      if (start === undefined) continue;
      child('llm.first_token', start, start + s.llm_ttfb_ms, { 'voiceplane.llm.step': s.step, 'voiceplane.llm.total_ms': s.llm_total_ms });
      // The step's tools start when its model output ends and run in parallel.
      for (const tool of t.tools) {
        if (tool.step !== s.step) continue;
        const toolStart = start + s.llm_total_ms;
        child('tool.call', toolStart, toolStart + tool.latencyMs, { 'voiceplane.tool.name': tool.name, 'voiceplane.tool.status': tool.status }, tool.status === 'success' ? undefined : tool.status);
      }
    }
    if (t.llmError) turn.setStatus({ code: SpanStatusCode.ERROR, message: t.llmError });
    if (t.ttsRequestAt) child('tts.first_byte', t.ttsRequestAt, t.ttsFirstAudioAt || t.endMs, {}, t.ttsFirstAudioAt ? undefined : 'no audio');
    turn.end(this.wall(Math.max(t.originMs, t.endMs)));
  }

  end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute('voiceplane.end_reason', reason);
    if (reason === 'error') this.span.setStatus({ code: SpanStatusCode.ERROR, message: 'call failed' });
    this.span.end(this.clock.now());
  }
}
