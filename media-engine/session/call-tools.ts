/**
 * The functions a call offers its LLM, built once per call from the session config. Each kind of
 * tool (HTTP tools, connector tools) contributes `CallTool`s; the turn runner only sees the list: the spec
 * it sends to the model and `run`, which never throws (failures are error results).
 */
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { LlmToolSpec } from '../../shared/providers/types.js';
import { runHttpTool, type ToolResult, type ToolRunDeps } from './tools.js';
import { buildConnectorTools, type ConnectorToolDeps } from './connector-tools.js';

export interface CallTool {
  spec: LlmToolSpec;
  run(argsJson: string, signal: AbortSignal): Promise<ToolResult>;
}

export function buildCallTools(config: SessionConfig, deps: ToolRunDeps & ConnectorToolDeps): CallTool[] {
  const httpTools: CallTool[] = config.tools.map((t) => ({
    spec: { name: t.name, description: t.description, parameters: t.parameters },
    run: (argsJson, signal) => runHttpTool(t, argsJson, signal, deps),
  }));
  return [...httpTools, ...buildConnectorTools(config, deps)];
}
