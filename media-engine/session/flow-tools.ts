/**
 * The functions a flow node offers the model (issue 19; docs/flows.md), built for each LLM step
 * from the run's copy of the flow state:
 * - `go_to_<node>` per outgoing edge (description: the edge's condition, else the target's label);
 * - `set_variables` with a typed property per variable the node collects;
 * - the agent's tools the node allows (`tools`; default all) plus `search_knowledge`, with the
 *   collected variables filled into HTTP tools' `{{name}}` templates.
 * A transition that is not an edge of the current node is refused and the model told which ones
 * exist; a transition into a `tool` node runs that tool at once and follows its outgoing edge.
 */
import { SET_VARIABLES_FUNCTION, TRANSITION_PREFIX, transitionFunctionName, type FlowNodeConfig, type FlowVariableConfig } from '../../shared/voice/flow.js';
import type { HttpToolConfig } from '../../shared/voice/session-config.js';
import type { CallTool } from './call-tools.js';
import type { FlowEffect, FlowState } from './flow-state.js';
import { fillTemplate, runHttpTool, type ToolResult, type ToolRunDeps } from './tools.js';
import { SEARCH_KNOWLEDGE_FUNCTION } from './knowledge-tool.js';
import type { StepContext } from './turn-runner.js';

/** `tool` nodes chained without a prompt node between them: a bound against a loop of tool nodes. */
const MAX_AUTO_STEPS = 10;

export interface FlowToolDeps {
  /** The call's tools (`buildCallTools`): HTTP, connector and knowledge tools. */
  callTools: readonly CallTool[];
  /** The HTTP tool configs, to fill flow variables into their templates. */
  httpTools: readonly HttpToolConfig[];
  runDeps: ToolRunDeps;
  /** The call's base system prompt. */
  basePrompt: string;
}

/** The step context of a run in flow mode: re-read before every LLM step. */
export function flowStepContext(flow: FlowState, deps: FlowToolDeps): () => StepContext {
  return () => {
    const node = flow.node;
    const transitions = flow.outgoing().map((e) => {
      const target = flow.nodeById(e.to)!;
      return { name: transitionFunctionName(e.to), description: e.description || `go to: ${target.label || target.id}`, to: e.to };
    });
    const tools: CallTool[] = [];
    if (!flow.terminal) {
      for (const t of deps.callTools) if (offeredInNode(node, t.spec.name)) tools.push(withVariables(t, flow, deps));
      const collect = collectable(node, flow.flow.variables);
      if (collect.length) tools.push(setVariablesTool(collect, flow));
      for (const t of transitions) tools.push(transitionTool(t.name, t.description, t.to, flow, deps));
    }
    return {
      tools,
      system: flow.systemPrompt(deps.basePrompt, transitions),
      temperature: node.temperature,
      voice: node.voice,
      unknownTool: (name) => (name.startsWith(TRANSITION_PREFIX) ? refusedTransition(name, flow, transitions) : undefined),
    };
  };
}

function offeredInNode(node: FlowNodeConfig, name: string): boolean {
  if (name === SEARCH_KNOWLEDGE_FUNCTION) return true;
  return node.tools === undefined || node.tools.includes(name);
}

function collectable(node: FlowNodeConfig, vars: readonly FlowVariableConfig[]): FlowVariableConfig[] {
  return node.collect === undefined ? [...vars] : vars.filter((v) => node.collect!.includes(v.name));
}

function result(status: 'success' | 'error', output: unknown, effects?: FlowEffect[]): ToolResult {
  const error = status === 'error' ? String((output as { error?: unknown }).error ?? 'refused') : undefined;
  return { status, content: JSON.stringify(output), output, error, latencyMs: 0, attempts: 1, effects };
}

function transitionTool(name: string, description: string, to: string, flow: FlowState, deps: FlowToolDeps): CallTool {
  return {
    spec: { name, description, parameters: { type: 'object', properties: {} } },
    async run(_argsJson, signal) {
      const from = flow.node.id;
      // The edge may be gone if an earlier call of this step already moved the run on.
      if (!flow.outgoing().some((e) => e.to === to)) return refusedTransition(name, flow, []);
      const effects: FlowEffect[] = [];
      const enter = (nodeId: string): void => {
        const e: FlowEffect = { kind: 'enter', nodeId };
        flow.apply(e);
        effects.push(e);
      };
      enter(to);
      const notes: Record<string, unknown> = {};
      for (let i = 0; i < MAX_AUTO_STEPS && flow.node.type === 'tool' && !signal.aborted; i++) {
        const node = flow.node;
        const out = await runToolNode(node, flow, deps, signal);
        // What the tool's `response_path` picked, as the model gets it in a normal call (the
        // whole response went into every later prompt before).
        const value = out.status === 'success' && out.value !== undefined ? out.value : out.output;
        notes[node.tool_name ?? node.id] = value;
        if (node.result_variable) {
          const e: FlowEffect = { kind: 'set', name: node.result_variable, value };
          flow.apply(e);
          effects.push(e);
        }
        const next = flow.outgoing();
        if (next.length !== 1) break;
        enter(next[0]!.to);
      }
      const output: Record<string, unknown> = { ok: true, from, now_in: flow.node.id, label: flow.node.label };
      if (Object.keys(notes).length) output.tool_results = notes;
      if (flow.terminal) output.note = 'this is the last step: say goodbye; the call ends after your answer';
      return result('success', output, effects);
    },
  };
}

function refusedTransition(name: string, flow: FlowState, transitions: Array<{ name: string }>): ToolResult {
  const allowed = (transitions.length ? transitions.map((t) => t.name) : flow.outgoing().map((e) => transitionFunctionName(e.to)));
  return result('error', {
    error: `no transition ${name} from step ${flow.node.id}; you are still in step ${flow.node.id}`,
    allowed_transitions: allowed,
  });
}

/** A `tool` node: the agent's tool named by the node, arguments from its templates and the variables. */
async function runToolNode(node: FlowNodeConfig, flow: FlowState, deps: FlowToolDeps, signal: AbortSignal): Promise<ToolResult> {
  const tool = deps.callTools.find((t) => t.spec.name === node.tool_name);
  if (!tool) return result('error', { error: `tool ${node.tool_name ?? ''} is not among the agent's tools` });
  const args = fillTemplate(node.tool_arguments ?? {}, { ...flow.variables });
  return withVariables(tool, flow, deps).run(JSON.stringify(args), signal);
}

/** HTTP tools: collected variables fill `{{name}}` in the URL, headers and body template (the model's own arguments still win). */
function withVariables(tool: CallTool, flow: FlowState, deps: FlowToolDeps): CallTool {
  const http = deps.httpTools.find((t) => t.name === tool.spec.name);
  if (!http) return tool;
  return {
    spec: tool.spec,
    run: (argsJson, signal) => {
      const names = new Set(flow.flow.variables.map((v) => v.name));
      let modelArgs: Record<string, unknown> = {};
      try {
        const parsed = JSON.parse(argsJson || '{}') as unknown;
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) modelArgs = parsed as Record<string, unknown>;
      } catch {
        return tool.run(argsJson, signal);
      }
      // Only declared variables that have a value and that the model did not supply are filled.
      const fill: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(flow.variables)) if (names.has(k) && !(k in modelArgs)) fill[k] = v;
      if (!Object.keys(fill).length) return tool.run(argsJson, signal);
      const filled: HttpToolConfig = {
        ...http,
        endpoint_url: fillKnown(http.endpoint_url, fill, true),
        headers: Object.fromEntries(Object.entries(http.headers).map(([k, v]) => [k, fillKnown(v, fill, false)])),
        request_body: http.request_body === undefined ? undefined : fillKnownDeep(http.request_body, fill),
      };
      return runHttpTool(filled, argsJson, signal, deps.runDeps);
    },
  };
}

function fillKnown(s: string, vars: Record<string, unknown>, encode: boolean): string {
  return s.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (m, k: string) => {
    if (!(k in vars)) return m;
    const v = vars[k];
    const str = typeof v === 'string' ? v : JSON.stringify(v);
    return encode ? encodeURIComponent(str) : str;
  });
}

function fillKnownDeep(t: unknown, vars: Record<string, unknown>): unknown {
  if (typeof t === 'string') {
    const whole = /^\{\{\s*([\w.-]+)\s*\}\}$/.exec(t);
    if (whole && whole[1]! in vars) return vars[whole[1]!];
    return fillKnown(t, vars, false);
  }
  if (Array.isArray(t)) return t.map((x) => fillKnownDeep(x, vars));
  if (t && typeof t === 'object') return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, fillKnownDeep(v, vars)]));
  return t;
}

// ------------------------------------------------------------------ variables

function setVariablesTool(vars: FlowVariableConfig[], flow: FlowState): CallTool {
  return {
    spec: {
      name: SET_VARIABLES_FUNCTION,
      description: 'Record what the caller told you. Call it as soon as you learn any of these values.',
      parameters: { type: 'object', properties: Object.fromEntries(vars.map((v) => [v.name, { type: v.type }])) },
    },
    async run(argsJson) {
      let args: Record<string, unknown>;
      try {
        const parsed = JSON.parse(argsJson || '{}') as unknown;
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        args = parsed as Record<string, unknown>;
      } catch {
        return result('error', { error: 'arguments must be a JSON object' });
      }
      const declared = new Map(flow.flow.variables.map((v) => [v.name, v]));
      const effects: FlowEffect[] = [];
      const problems: string[] = [];
      for (const [name, raw] of Object.entries(args)) {
        const v = declared.get(name);
        if (!v) {
          problems.push(`${name}: not a variable of this flow`);
          continue;
        }
        const value = coerce(v.type, raw);
        if (value === undefined) {
          problems.push(`${name}: must be ${v.type === 'integer' ? 'an integer' : `a ${v.type}`}`);
          continue;
        }
        const e: FlowEffect = { kind: 'set', name, value };
        flow.apply(e);
        effects.push(e);
      }
      const saved = Object.fromEntries(effects.map((e) => [(e as { name: string }).name, (e as { value: unknown }).value]));
      if (problems.length) return result('error', { error: problems.join('; '), saved }, effects);
      return result('success', { ok: true, saved }, effects);
    },
  };
}

/** The value as its declared type, or undefined when it cannot be one (numeric strings are numbers). */
export function coerce(type: FlowVariableConfig['type'], raw: unknown): unknown {
  switch (type) {
    case 'string':
      return typeof raw === 'string' ? raw : typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : undefined;
    case 'number':
    case 'integer': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      if (!Number.isFinite(n)) return undefined;
      return type === 'integer' && !Number.isInteger(n) ? undefined : n;
    }
    case 'boolean':
      return typeof raw === 'boolean' ? raw : raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'object':
      return raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : undefined;
    case 'array':
      return Array.isArray(raw) ? raw : undefined;
  }
}
