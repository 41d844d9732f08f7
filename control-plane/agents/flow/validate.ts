/**
 * Conversation-flow checks. Pure. A flow may be saved while invalid (a draft in progress); the
 * errors travel with it (`is_valid`, `validation_errors`) and publishing an agent in `flow` mode
 * refuses an invalid flow. Each error names the offending node ids; one error per rule.
 * The validator accepts exactly what the engine runs (issue 19; node schema in docs/flows.md):
 * the node types of `shared/voice/flow.ts`, node `config` fields of the right types, `tool` nodes
 * with a tool name and one way out, `end`/`transfer` nodes with none.
 */
import { invalid } from '../../../shared/errors.js';
import { FLOW_NODE_TYPES, FLOW_VARIABLE_TYPES, transitionFunctionName } from '../../../shared/voice/flow.js';
import type { FlowGraphJson, FlowNodeJson, FlowValidationErrorJson, FlowVariableJson } from '../types.js';

/** Node types a flow may use: the ones the engine runs. `start` and `prompt` come from the spec; the rest are ours. */
export const NODE_TYPES = FLOW_NODE_TYPES;
export const VARIABLE_TYPES = FLOW_VARIABLE_TYPES;

/** Node `config` fields the engine reads, and the JSON type each must have. */
const CONFIG_FIELDS: Record<string, 'string' | 'string[]' | 'number' | 'object'> = {
  instructions: 'string',
  prompt: 'string',
  tools: 'string[]',
  collect: 'string[]',
  voice: 'string',
  temperature: 'number',
  tool_name: 'string',
  tool_arguments: 'object',
  result_variable: 'string',
  transfer_to: 'string',
};
export const FLOW_LIMITS = { nodes: 500, edges: 2000, variables: 100, idChars: 128, labelChars: 500 };

const VARIABLE_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * Rules that keep a flow from being saved valid or published, but that the engine can still run
 * (it joins duplicate edges into one transition and bounds a tool-node loop): a version published
 * before they existed keeps starting calls (`control-plane/voice/flow-config.ts`).
 */
export const AUTHORING_ONLY_CODES: ReadonlySet<string> = new Set(['DUPLICATE_EDGE', 'TOOL_NODE_CYCLE']);

export function validateFlow(g: FlowGraphJson): FlowValidationErrorJson[] {
  const errors: FlowValidationErrorJson[] = [];
  const add = (code: string, message: string, nodeIds: string[]) => errors.push({ code, message, node_ids: nodeIds });

  const ids = new Set<string>();
  const dup = new Set<string>();
  let missingId = false;
  for (const n of g.nodes) {
    if (!n.id) {
      missingId = true;
      continue;
    }
    if (ids.has(n.id)) dup.add(n.id);
    ids.add(n.id);
  }
  if (missingId) add('MISSING_NODE_ID', 'every node needs a non-empty id', ['']);
  if (dup.size) add('DUPLICATE_NODE_ID', `duplicate node ids: ${[...dup].join(', ')}`, [...dup]);

  const unknownType = uniq(g.nodes.filter((n) => !(NODE_TYPES as readonly string[]).includes(n.type)).map((n) => n.id));
  if (unknownType.length) add('UNKNOWN_NODE_TYPE', `unknown node type (allowed: ${NODE_TYPES.join(', ')})`, unknownType);

  const starts = uniq(g.nodes.filter((n) => n.type === 'start').map((n) => n.id));
  const startNode = g.nodes.find((n) => n.id === g.start_node_id && n.id !== '');
  if (!startNode) {
    add('MISSING_START_NODE', g.start_node_id ? `start node ${g.start_node_id} is not among the nodes` : 'start_node_id is empty', g.start_node_id ? [g.start_node_id] : []);
  } else if (startNode.type !== 'start') {
    add('START_NODE_WRONG_TYPE', `start node ${startNode.id} must have type start`, [startNode.id]);
  }
  if (starts.length > 1) add('MULTIPLE_START_NODES', 'only one node may have type start', starts);

  const dangling = uniq(g.edges.flatMap((e) => [e.from, e.to]).filter((id) => !ids.has(id)));
  if (dangling.length) add('EDGE_UNKNOWN_NODE', `edges reference unknown nodes: ${dangling.join(', ')}`, dangling);

  if (startNode) {
    const next = new Map<string, string[]>();
    for (const e of g.edges) {
      if (!ids.has(e.from) || !ids.has(e.to)) continue;
      next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    }
    const seen = new Set<string>([startNode.id]);
    const queue = [startNode.id];
    while (queue.length) {
      for (const to of next.get(queue.shift()!) ?? []) {
        if (!seen.has(to)) {
          seen.add(to);
          queue.push(to);
        }
      }
    }
    const unreachable = [...ids].filter((id) => !seen.has(id));
    if (unreachable.length) add('UNREACHABLE_NODE', `not reachable from the start node: ${unreachable.join(', ')}`, unreachable);
  }

  const badConfig = uniq(g.nodes.filter((n) => configProblem(n) !== undefined).map((n) => n.id));
  if (badConfig.length) {
    const first = g.nodes.find((n) => configProblem(n) !== undefined)!;
    add('INVALID_NODE_CONFIG', `node config fields of the wrong type (first: ${first.id}: ${configProblem(first)})`, badConfig);
  }
  const outgoing = (id: string) => new Set(g.edges.filter((e) => e.from === id && ids.has(e.to)).map((e) => e.to)).size;
  const toolNodes = g.nodes.filter((n) => n.type === 'tool');
  const toolWithoutName = uniq(toolNodes.filter((n) => typeof n.config?.tool_name !== 'string' || !n.config.tool_name).map((n) => n.id));
  if (toolWithoutName.length) add('TOOL_NODE_WITHOUT_TOOL', 'a tool node needs config.tool_name (one of the agent tools)', toolWithoutName);
  const toolEdges = uniq(toolNodes.filter((n) => outgoing(n.id) !== 1).map((n) => n.id));
  if (toolEdges.length) add('TOOL_NODE_EDGES', 'a tool node needs exactly one outgoing edge (the engine follows it after the tool ran)', toolEdges);
  // A cycle of tool nodes only never waits for the caller: the engine would run it until its step
  // bound and leave the call inside it. Each tool node has one way out; follow those.
  const toolIds = new Set(toolNodes.map((n) => n.id));
  const toolNext = new Map(g.edges.filter((e) => toolIds.has(e.from)).map((e) => [e.from, e.to]));
  const inToolCycle = new Set<string>();
  for (const id of toolIds) {
    const path: string[] = [];
    let at: string | undefined = id;
    while (at !== undefined && toolIds.has(at) && !path.includes(at) && path.length <= toolIds.size) {
      path.push(at);
      at = toolNext.get(at);
    }
    if (at !== undefined && path.includes(at)) for (const x of path.slice(path.indexOf(at))) inToolCycle.add(x);
  }
  if (inToolCycle.size) add('TOOL_NODE_CYCLE', 'tool nodes that lead only to each other never give the caller a turn: put a prompt node in the loop', [...inToolCycle]);
  // Two edges between the same nodes become one transition function: the second condition would be dropped.
  const pairs = new Set<string>();
  const duplicateEdges: string[] = [];
  for (const e of g.edges) {
    const key = `${e.from}\u0000${e.to}`;
    if (pairs.has(key)) duplicateEdges.push(e.from);
    pairs.add(key);
  }
  if (duplicateEdges.length) add('DUPLICATE_EDGE', 'two edges join the same two nodes (one transition each way): merge their conditions', uniq(duplicateEdges));
  const terminalEdges = uniq(g.nodes.filter((n) => (n.type === 'end' || n.type === 'transfer') && outgoing(n.id) > 0).map((n) => n.id));
  if (terminalEdges.length) add('TERMINAL_NODE_HAS_EDGES', 'end and transfer nodes end the call: they have no outgoing edges', terminalEdges);
  // Two node ids that map to one function name (`go_to_a.b` and `go_to_a_b`) could not be told apart.
  const byFunction = new Map<string, string[]>();
  for (const id of ids) byFunction.set(transitionFunctionName(id), [...(byFunction.get(transitionFunctionName(id)) ?? []), id]);
  const clashes = [...byFunction.values()].filter((v) => v.length > 1).flat();
  if (clashes.length) add('TRANSITION_NAME_CLASH', `node ids that give the same transition function name: ${clashes.join(', ')}`, clashes);
  return errors;
}

/** What is wrong with a node's config for the engine, or undefined. Unknown keys are kept and ignored. */
function configProblem(n: FlowNodeJson): string | undefined {
  const c = n.config;
  if (!c) return undefined;
  for (const [key, type] of Object.entries(CONFIG_FIELDS)) {
    const v = c[key];
    if (v === undefined || v === null) continue;
    const ok =
      type === 'string'
        ? typeof v === 'string'
        : type === 'number'
          ? typeof v === 'number' && Number.isFinite(v) && (key !== 'temperature' || (v >= 0 && v <= 2))
          : type === 'object'
            ? typeof v === 'object' && !Array.isArray(v)
            : Array.isArray(v) && v.every((x) => typeof x === 'string');
    if (!ok) return `${key} must be ${type === 'string[]' ? 'an array of strings' : key === 'temperature' ? 'a number from 0 to 2' : `a ${type}`}`;
  }
  return undefined;
}

/**
 * Request-level checks (400, nothing saved): sizes and variable declarations. Structural problems
 * of the graph are validation errors instead, so an unfinished flow can still be saved.
 */
export function checkFlowInput(g: FlowGraphJson, variables: FlowVariableJson[]): void {
  if (g.nodes.length > FLOW_LIMITS.nodes) throw invalid('graph.nodes', `at most ${FLOW_LIMITS.nodes} nodes`);
  if (g.edges.length > FLOW_LIMITS.edges) throw invalid('graph.edges', `at most ${FLOW_LIMITS.edges} edges`);
  g.nodes.forEach((n, i) => {
    if (n.id.length > FLOW_LIMITS.idChars) throw invalid(`graph.nodes[${i}].id`, `must be at most ${FLOW_LIMITS.idChars} characters`);
    if (n.label.length > FLOW_LIMITS.labelChars) throw invalid(`graph.nodes[${i}].label`, `must be at most ${FLOW_LIMITS.labelChars} characters`);
  });
  if (variables.length > FLOW_LIMITS.variables) throw invalid('variables', `at most ${FLOW_LIMITS.variables} variables`);
  const names = new Set<string>();
  variables.forEach((v, i) => {
    if (!VARIABLE_NAME_RE.test(v.name)) throw invalid(`variables[${i}].name`, 'must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$');
    if (names.has(v.name)) throw invalid(`variables[${i}].name`, `duplicate variable ${v.name}`);
    names.add(v.name);
    if (!(VARIABLE_TYPES as readonly string[]).includes(v.type)) throw invalid(`variables[${i}].type`, `must be one of ${VARIABLE_TYPES.join(', ')}`);
  });
}

function uniq(xs: string[]): string[] {
  return [...new Set(xs)];
}
