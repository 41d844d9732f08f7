/**
 * The functions a call offers its LLM, built once per call from the session config. Each kind of
 * tool (HTTP tools, connector tools, the knowledge search) contributes `CallTool`s; the turn
 * runner only sees the list: the spec it sends to the model and `run`, which never throws
 * (failures are error results). In flow mode each node offers a subset of this list plus its flow
 * functions (`flow-tools.ts`).
 */
import { isReservedToolName, SEARCH_KNOWLEDGE_FUNCTION, TRANSFER_TO_HUMAN_FUNCTION } from '../../shared/agent/reserved-tools.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { LlmToolSpec } from '../../shared/providers/types.js';
import { runHttpTool, type ToolResult, type ToolRunDeps } from './tools.js';
import { buildConnectorTools, type ConnectorToolDeps } from './connector-tools.js';
import type { KnowledgeSearch } from '../knowledge/search.js';
import { knowledgeSearchTool } from './knowledge-tool.js';

export interface CallTool {
  spec: LlmToolSpec;
  run(argsJson: string, signal: AbortSignal): Promise<ToolResult>;
}

export interface CallToolDeps extends ToolRunDeps, ConnectorToolDeps {
  /** Answers `search_knowledge` (issue 19). Absent: the function is not offered. */
  knowledge?: KnowledgeSearch;
  /** `transfer_to_human` (issue 21, `config.human_handoff`). Absent: not offered. */
  requestHandoff?: () => void;
}

/** The hand-off function: asks for a portal agent once per call; the caller waits on the line. */
export function transferToHumanTool(requestHandoff: () => void): CallTool {
  let asked = false;
  return {
    spec: {
      name: TRANSFER_TO_HUMAN_FUNCTION,
      description: 'Hand the caller to a human agent. Use it when the caller asks for a person or you cannot help. Tell the caller you are connecting them and to stay on the line.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
    async run() {
      const output = asked
        ? { status: 'already_requested', note: 'A human agent was already asked for; keep the caller on the line.' }
        : { status: 'requested', note: 'A human agent is being connected. Ask the caller to stay on the line.' };
      if (!asked) requestHandoff();
      asked = true;
      return { status: 'success', content: JSON.stringify(output), output, latencyMs: 0, attempts: 1 };
    },
  };
}

export function buildCallTools(config: SessionConfig, deps: CallToolDeps): CallTool[] {
  // An agent tool named like a built-in this call offers (possible before the names were
  // reserved) is left out: offered twice, it shadowed the built-in.
  const builtIn = (name: string): boolean =>
    (name === TRANSFER_TO_HUMAN_FUNCTION && !!config.human_handoff && !!deps.requestHandoff) ||
    (name === SEARCH_KNOWLEDGE_FUNCTION && !!config.knowledge_search && !!deps.knowledge) ||
    (!!config.flow && isReservedToolName(name) && name !== TRANSFER_TO_HUMAN_FUNCTION && name !== SEARCH_KNOWLEDGE_FUNCTION);
  const tools: CallTool[] = config.tools
    .filter((t) => !builtIn(t.name))
    .map((t) => ({
      spec: { name: t.name, description: t.description, parameters: t.parameters },
      run: (argsJson, signal) => runHttpTool(t, argsJson, signal, deps),
    }));
  tools.push(...buildConnectorTools(config, deps));
  if (config.human_handoff && deps.requestHandoff) tools.push(transferToHumanTool(deps.requestHandoff));
  if (config.knowledge_search && deps.knowledge) tools.push(knowledgeSearchTool(config.knowledge_search, config.workspace_id, deps.knowledge, deps.clock));
  return tools;
}
