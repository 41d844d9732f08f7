/**
 * A simulation test whose agent keeps calling tools past MAX_LLM_STEPS: the turn ends with
 * `llm_error` TOO_MANY_TOOL_STEPS, which is the agent's behaviour (an empty answer, judged), not
 * a provider failure that would mark the case errored and throw its transcript away.
 */
import { describe, expect, it } from 'vitest';
import { simulateConversation } from '../../../control-plane/simtests/conversation.js';
import { MAX_LLM_STEPS } from '../../../shared/agent/turn-runner.js';
import { SIM_CALLER_TOOL } from '../../../shared/providers/llm/sim-simtest.js';
import type { LlmEvent, LlmProvider } from '../../../shared/providers/types.js';
import { realClock } from '../../../shared/clock.js';
import { sessionConfig } from '../../helpers/session-config.js';

function llm(label: string, answer: () => LlmEvent[]): LlmProvider & { requests: number } {
  const p = {
    label,
    model: 'm',
    requests: 0,
    capabilities: { tools: true, parallelToolCalls: true },
    stream: () => {
      p.requests++;
      const events = answer();
      return (async function* () {
        yield* events;
      })();
    },
  };
  return p;
}

describe('simulation test: an agent looping on tools', () => {
  it('is judged on its transcript (the tool calls are in it), not errored', async () => {
    let said = 0;
    const caller = llm('caller', () => [
      { type: 'tool_calls', calls: [{ id: `c${said}`, name: SIM_CALLER_TOOL, arguments: JSON.stringify(said++ === 0 ? { say: 'Where is my order?', goal_reached: false, end_call: false } : { say: '', goal_reached: false, end_call: true }) }] },
      { type: 'done', finishReason: 'tool_calls' },
    ]);
    let n = 0;
    const agent = llm('agent', () => [
      { type: 'tool_calls', calls: [{ id: `t${n++}`, name: 'look', arguments: '{}' }] },
      { type: 'done', finishReason: 'tool_calls' },
    ]);
    const tool = { spec: { name: 'look', description: 'd', parameters: { type: 'object' } }, run: async () => ({ status: 'success' as const, content: '{"status":"pending"}', output: {}, latencyMs: 0, attempts: 1 }) };
    const out = await simulateConversation({
      config: sessionConfig({ welcome_message: '', max_turns: 5 }),
      testCase: { persona: 'p', goal: 'g', max_turns: 3 },
      agentLlm: agent,
      callerLlm: caller,
      tools: [tool],
      clock: realClock,
      callerTimeoutMs: 5000,
      signal: new AbortController().signal,
    });
    expect(agent.requests).toBe(MAX_LLM_STEPS);
    expect(out.endedBy).toBe('caller_hung_up');
    expect(out.transcript.filter((e) => e.role === 'tool')).toHaveLength(MAX_LLM_STEPS);
  });
});
