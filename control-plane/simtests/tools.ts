/**
 * The tools a simulated conversation offers the agent: the tested version's HTTP tools, run by
 * the engine's own `runHttpTool` (shared/agent/tools.ts: the outbound client's address policy,
 * timeouts, retries), so a test hits the real endpoints, unless the test case mocks the tool:
 * `mocks: {tool_name: <any JSON>}` answers that JSON as the tool's result, without a request.
 */
import type { Clock } from '../../shared/clock.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { HttpToolConfig } from '../../shared/voice/session-config.js';
import { runHttpTool } from '../../shared/agent/tools.js';
import type { AgentTool } from '../../shared/agent/turn-runner.js';

export function buildSimTools(tools: HttpToolConfig[], mocks: Record<string, unknown>, deps: { outbound: OutboundClient; clock: Clock }): AgentTool[] {
  return tools.map((t) => {
    const spec = { name: t.name, description: t.description, parameters: t.parameters };
    if (Object.hasOwn(mocks, t.name)) {
      const canned = mocks[t.name];
      const content = typeof canned === 'string' ? canned : JSON.stringify(canned);
      return { spec, run: async () => ({ status: 'success' as const, content, output: canned, latencyMs: 0, attempts: 1 }) };
    }
    return { spec, run: (argsJson: string, signal: AbortSignal) => runHttpTool(t, argsJson, signal, deps) };
  });
}
