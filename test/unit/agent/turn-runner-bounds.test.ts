/**
 * One LLM step is bounded by us, not by the vendor: an answer that never ends is cut at
 * MAX_STEP_TEXT_CHARS (what came before is kept and spoken), and a stream that keeps sending empty
 * chunks ends after MAX_STEP_MS. Either way the vendor's stream is closed and the run reports an
 * `llm_error` with code RESPONSE_TOO_LARGE. Before, both ran for as long as the vendor kept going.
 */
import { describe, expect, it } from 'vitest';
import { MAX_LLM_STEPS, MAX_STEP_MS, MAX_STEP_TEXT_CHARS, MAX_TTS_BEHIND_MS, TOO_MANY_TOOL_STEPS, maxTtsAudioMs, runTurn, type TurnMsg } from '../../../shared/agent/turn-runner.js';
import type { LlmEvent, LlmProvider, TtsProvider } from '../../../shared/providers/types.js';
import { MAX_TOOL_CALLS_PER_RESPONSE } from '../../../shared/providers/llm/limits.js';
import { ProviderError } from '../../../shared/providers/errors.js';

/** An LLM that streams `next()` forever; `closed` turns true when the consumer lets go of it. */
function endlessLlm(next: (i: number) => LlmEvent) {
  const state = { closed: false, yielded: 0 };
  const llm: LlmProvider = {
    label: 'endless',
    model: 'm',
    capabilities: { tools: true, parallelToolCalls: true },
    stream: () =>
      (async function* () {
        try {
          for (let i = 0; ; i++) {
            state.yielded++;
            yield next(i);
          }
        } finally {
          state.closed = true;
        }
      })(),
  };
  return { llm, state };
}

async function run(llm: LlmProvider, now: () => number) {
  const posted: TurnMsg[] = [];
  await runTurn({ messages: [{ role: 'user', content: 'talk' }], tools: [], llm, ttsSampleRateHz: 16000, signal: new AbortController().signal, post: (m) => posted.push(m), now });
  return posted;
}

/** Runs one turn whose model answers `text` at once, spoken by `tts`; returns what the run posted. */
async function speak(text: string, tts: TtsProvider, now: () => number): Promise<TurnMsg[]> {
  const llm: LlmProvider = {
    label: 'llm',
    model: 'm',
    capabilities: { tools: false, parallelToolCalls: false },
    stream: () =>
      (async function* () {
        yield { type: 'text' as const, delta: text };
        yield { type: 'done' as const, finishReason: 'stop' };
      })(),
  };
  const posted: TurnMsg[] = [];
  await runTurn({ messages: [{ role: 'user', content: 'talk' }], tools: [], llm, tts, ttsSampleRateHz: 16000, signal: new AbortController().signal, post: (m) => posted.push(m), now });
  return posted;
}

describe('runTurn bounds one LLM step', () => {
  it('an answer that never ends is cut at MAX_STEP_TEXT_CHARS, kept up to the cut, and the stream is closed', async () => {
    const { llm, state } = endlessLlm(() => ({ type: 'text', delta: 'and so on, ' }));
    const posted = await run(llm, () => 0);
    const streamed = posted.flatMap((m) => (m.kind === 'llm_delta' ? [m.text] : [])).join('');
    expect(streamed.length).toBe(MAX_STEP_TEXT_CHARS);
    expect(posted.find((m) => m.kind === 'llm_error')).toMatchObject({ code: 'RESPONSE_TOO_LARGE', message: expect.stringContaining(`${MAX_STEP_TEXT_CHARS} characters`) });
    const done = posted.find((m) => m.kind === 'run_done');
    expect(done).toMatchObject({ assistantText: streamed, appended: [{ role: 'assistant', content: streamed }] });
    expect(state.closed).toBe(true);
  });

  it('tool calls beyond MAX_TOOL_CALLS_PER_RESPONSE in one step are refused before any tool runs', async () => {
    const { llm, state } = endlessLlm((i) => ({ type: 'tool_calls', calls: [{ id: `c${i}`, name: 'look', arguments: '{}' }] }));
    let ran = 0;
    const tool = { spec: { name: 'look', description: 'd', parameters: { type: 'object' } }, run: async () => (ran++, { status: 'success' as const, content: '{}', output: {}, latencyMs: 0, attempts: 1 }) };
    const posted: TurnMsg[] = [];
    await runTurn({ messages: [{ role: 'user', content: 'x' }], tools: [tool], llm, ttsSampleRateHz: 16000, signal: new AbortController().signal, post: (m) => posted.push(m), now: () => 0 });
    expect(posted.find((m) => m.kind === 'llm_error')).toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
    expect(ran).toBe(0);
    expect(state.yielded).toBe(MAX_TOOL_CALLS_PER_RESPONSE + 1);
  });

  it('a model that keeps calling tools stops after MAX_LLM_STEPS with an llm_error saying so (the caller heard nothing)', async () => {
    let requests = 0;
    const llm: LlmProvider = {
      label: 'loopy',
      model: 'm',
      capabilities: { tools: true, parallelToolCalls: true },
      stream: () =>
        (async function* () {
          requests++;
          yield { type: 'tool_calls', calls: [{ id: `c${requests}`, name: 'look', arguments: '{}' }] } as LlmEvent;
          yield { type: 'done', finishReason: 'tool_calls' } as LlmEvent;
        })(),
    };
    const tool = { spec: { name: 'look', description: 'd', parameters: { type: 'object' } }, run: async () => ({ status: 'success' as const, content: '{}', output: {}, latencyMs: 0, attempts: 1 }) };
    const posted: TurnMsg[] = [];
    await runTurn({ messages: [{ role: 'user', content: 'x' }], tools: [tool], llm, ttsSampleRateHz: 16000, signal: new AbortController().signal, post: (m) => posted.push(m), now: () => 0 });
    expect(requests).toBe(MAX_LLM_STEPS);
    expect(posted.filter((m) => m.kind === 'llm_error')).toEqual([{ kind: 'llm_error', step: MAX_LLM_STEPS, code: TOO_MANY_TOOL_STEPS, message: `loopy: still calling tools after ${MAX_LLM_STEPS} steps; the turn ends without an answer` }]);
  });

  it('a stream of empty chunks ends after MAX_STEP_MS', async () => {
    const { llm, state } = endlessLlm(() => ({ type: 'text', delta: '' }));
    let t = 0;
    const posted = await run(llm, () => (t += 1000));
    expect(posted.find((m) => m.kind === 'llm_error')).toMatchObject({ code: 'RESPONSE_TOO_LARGE', message: expect.stringContaining(`${MAX_STEP_MS} ms`) });
    expect(state.closed).toBe(true);
    // One chunk per simulated second: stopped right after the bound, not later.
    expect(state.yielded).toBeLessThanOrEqual(MAX_STEP_MS / 1000 + 2);
  });
});

describe('runTurn bounds the speech of a sentence', () => {
  it('a TTS stream dripping audio ever further behind real time fails the sentence (TTS_TOO_SLOW), closes the stream, and the next sentence is spoken', async () => {
    let t = 0;
    const streams: Array<{ closed: boolean }> = [];
    const tts: TtsProvider = {
      label: 'drip',
      capabilities: { streaming: true, sampleRatesHz: [16000] },
      synthesize: ({ text }) =>
        (async function* () {
          const state = { closed: false };
          streams.push(state);
          try {
            if (text.startsWith('Second')) {
              yield { samples: new Int16Array(16000), sampleRateHz: 16000 };
              return;
            }
            // 20 ms of audio, then 2 ms every 5 s: the vendor's stream never goes idle.
            yield { samples: new Int16Array(320), sampleRateHz: 16000 };
            for (;;) {
              t += 5000;
              yield { samples: new Int16Array(32), sampleRateHz: 16000 };
            }
          } finally {
            state.closed = true;
          }
        })(),
    };
    const posted = await speak('First sentence here. Second sentence here.', tts, () => t);
    const failed = posted.find((m) => m.kind === 'tts_failed');
    expect(failed).toMatchObject({ code: 'TTS_TOO_SLOW', partial: true });
    expect(streams.map((s) => s.closed)).toEqual([true, true]);
    // Failed after the bound (one 5 s drip past it), not after the drips ran on.
    expect(t).toBeLessThanOrEqual(MAX_TTS_BEHIND_MS + 5000);
    const audio = posted.flatMap((m) => (m.kind === 'tts_audio' ? [m.chunk.samples.length] : []));
    expect(audio.at(-1)).toBe(16000);
  });

  it('a TTS stream that never ends (faster than real time) fails the sentence at its audio bound (TTS_TOO_LONG); the turn asks it for nothing more', async () => {
    const streams: Array<{ closed: boolean; audioMs: number }> = [];
    const tts: TtsProvider = {
      label: 'loop',
      capabilities: { streaming: true, sampleRatesHz: [16000] },
      synthesize: ({ text }) =>
        (async function* () {
          const state = { closed: false, audioMs: 0 };
          streams.push(state);
          try {
            if (text.startsWith('Bye')) {
              yield { samples: new Int16Array(16000), sampleRateHz: 16000 };
              return;
            }
            for (;;) {
              state.audioMs += 100;
              yield { samples: new Int16Array(1600), sampleRateHz: 16000 };
            }
          } finally {
            state.closed = true;
          }
        })(),
    };
    const llm: LlmProvider = {
      label: 'llm',
      model: 'm',
      capabilities: { tools: false, parallelToolCalls: false },
      stream: () =>
        (async function* () {
          yield { type: 'text' as const, delta: 'Hello there. Bye for now.' };
          yield { type: 'done' as const, finishReason: 'stop' };
        })(),
    };
    const posted: TurnMsg[] = [];
    // The clock stands still: audio arrives faster than real time, so only the length bound can end it.
    await runTurn({ messages: [{ role: 'user', content: 'talk' }], tools: [], llm, tts, ttsSampleRateHz: 16000, signal: new AbortController().signal, post: (m) => posted.push(m), now: () => 0 });
    expect(posted.find((m) => m.kind === 'tts_failed')).toMatchObject({ code: 'TTS_TOO_LONG', partial: true });
    // The looping vendor is closed and not asked for the turn's next sentence.
    expect(streams.map((s) => s.closed)).toEqual([true]);
    expect(streams[0]!.audioMs).toBe(maxTtsAudioMs('Hello there.') + 100);
    expect(posted.at(-1)?.kind).toBe('run_done');
  });

  it.each([
    ['FIRST_BYTE_TIMEOUT', ['One sentence here.']],
    ['UPSTREAM_UNAVAILABLE', ['One sentence here.', 'Two sentences here.', 'Three of them.']],
  ] as const)('a TTS that failed a sentence with %s: the turn asks it for %j (a hung vendor: one error, not 30 s of silence per sentence)', async (code, expected) => {
    const asked: string[] = [];
    const tts: TtsProvider = {
      label: 'hung',
      capabilities: { streaming: true, sampleRatesHz: [16000] },
      synthesize: ({ text }) =>
        (async function* () {
          asked.push(text);
          throw new ProviderError({ provider: 'hung', code, retryable: true, message: `hung: ${code}` });
        })(),
    };
    const posted = await speak('One sentence here. Two sentences here. Three of them.', tts, () => 0);
    expect(asked).toEqual(expected);
    expect(posted.filter((m) => m.kind === 'tts_failed')).toHaveLength(expected.length);
    expect(posted.find((m) => m.kind === 'tts_failed')).toMatchObject({ code, partial: false });
    // Every sentence still opens and closes its piece (the record keeps the text), and the run ends.
    expect(posted.filter((m) => m.kind === 'tts_piece_start')).toHaveLength(3);
    expect(posted.filter((m) => m.kind === 'tts_piece_end')).toHaveLength(3);
    expect(posted.at(-1)?.kind).toBe('run_done');
  });
});
