/** The `sim` LLM's scripted caller and judge (shared/providers/llm/sim-simtest.ts), through the provider's forced-tool path. */
import { describe, expect, it } from 'vitest';
import { createSimLlm } from '../../../shared/providers/llm/sim.js';
import { SIM_CALLER_TOOL, SIM_JUDGE_TOOL, simCallerTurn, simJudgeVerdicts } from '../../../shared/providers/llm/sim-simtest.js';

describe('sim caller', () => {
  const goal = 'Goal: Ask "what time is it" then say "bye"';
  it('says the quoted lines in order, then reports the goal reached', () => {
    expect(simCallerTurn(`${goal}\nConversation so far:\nAgent: Hello.`)).toEqual({ say: 'what time is it', goal_reached: false, end_call: false });
    expect(simCallerTurn(`${goal}\nAgent: Hello.\nCaller: what time is it\nAgent: Noon.`)).toEqual({ say: 'bye', goal_reached: false, end_call: false });
    expect(simCallerTurn(`${goal}\nCaller: what time is it\nAgent: Noon.\nCaller: bye\nAgent: Goodbye.`)).toEqual({ say: '', goal_reached: true, end_call: true });
  });
  it('says the whole goal when it quotes nothing, and hangs up when told to', () => {
    expect(simCallerTurn('Goal: I need a plumber')).toMatchObject({ say: 'I need a plumber' });
    expect(simCallerTurn('Goal: Say "stop" and hang up')).toEqual({ say: 'stop', goal_reached: false, end_call: true });
  });
});

describe('sim judge', () => {
  const transcript = 'Transcript:\nAgent: Welcome to Acme.\nCaller: hours?\nAgent: We open at nine.\n\nAssertions:\n';
  it('passes an assertion when one agent line holds every quoted phrase, quoting that line', () => {
    const r = simJudgeVerdicts(`${transcript}1. The agent says "open at nine"\n2. The agent says "refund"`) as any;
    expect(r.verdicts[0]).toMatchObject({ index: 1, passed: true, quote: 'Agent: We open at nine.' });
    expect(r.verdicts[1]).toMatchObject({ index: 2, passed: false, quote: 'Agent: Welcome to Acme.' });
    expect(r.verdicts[1].reason).toContain('"refund"');
  });
  it('without quotes, needs every keyword (4+ letters, not who acts) in one agent line', () => {
    const r = simJudgeVerdicts(`${transcript}1. The agent mentions Acme welcome\n2. The caller is told about opening hours`) as any;
    expect(r.verdicts.map((x: any) => x.passed)).toEqual([true, false]);
  });
});

describe('sim LLM forced calls', () => {
  it('answers the caller and judge tools through `toolChoice`', async () => {
    const llm = createSimLlm();
    const ask = async (tool: string, content: string) => {
      const tools = [{ name: tool, description: '', parameters: { type: 'object' } }];
      for await (const ev of llm.stream({ messages: [{ role: 'user', content }], tools, toolChoice: tool, signal: new AbortController().signal }))
        if (ev.type === 'tool_calls') return JSON.parse(ev.calls[0]!.arguments);
      return undefined;
    };
    expect(await ask(SIM_CALLER_TOOL, 'Goal: Say "hi"')).toEqual({ say: 'hi', goal_reached: false, end_call: false });
    expect((await ask(SIM_JUDGE_TOOL, `Agent: hi\n\nAssertions:\n1. The agent says "hi"`)).verdicts[0].passed).toBe(true);
  });
});
