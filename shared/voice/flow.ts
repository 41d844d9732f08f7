/**
 * The conversation flow a `flow`-mode call runs (issue 19, docs/flows.md): the published graph
 * resolved by the control plane into what the engine needs, with no database read on the call path.
 * Pure types and helpers both halves use (the validator and the session builder in the control
 * plane, the flow state in the engine), so the node types the API accepts are the ones calls run.
 */

/**
 * Node types a flow may use and the engine runs:
 * - `start`: where the call begins; talks like a `prompt` node (its own instructions optional).
 * - `prompt`: the model talks with this node's instructions (and optionally its own tools,
 *   voice and temperature) until it calls a transition function.
 * - `tool`: on entry the engine runs one of the agent's tools itself (arguments from `{{variables}}`),
 *   stores the result in a variable, and moves on along the node's single outgoing edge.
 * - `end`: the call hangs up once the reply that entered it has been played.
 * - `transfer`: like `end`, with reason `transfer` and the target in the record (docs/flows.md says
 *   what the engine does not do).
 */
export const FLOW_NODE_TYPES = ['start', 'prompt', 'tool', 'end', 'transfer'] as const;
export type FlowNodeType = (typeof FLOW_NODE_TYPES)[number];

export const FLOW_VARIABLE_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;
export type FlowVariableType = (typeof FLOW_VARIABLE_TYPES)[number];

/** Name of the generated function that stores variables. */
/** How a flow function moves the call's flow (media-engine/session/flow-state.ts applies it). */
export type FlowEffect = { kind: 'enter'; nodeId: string } | { kind: 'set'; name: string; value: unknown };

export const SET_VARIABLES_FUNCTION = 'set_variables';
/** Prefix of the generated transition functions: `go_to_<node id>`. */
export const TRANSITION_PREFIX = 'go_to_';

export interface FlowNodeConfig {
  id: string;
  type: FlowNodeType;
  label: string;
  /** What the model is told in this node (`{{variables}}` substituted when the node is entered). */
  instructions: string;
  /** Names of the agent's tools offered in this node; absent: all of them. */
  tools?: string[];
  /** Variables the model may set in this node; absent: all declared ones. */
  collect?: string[];
  /** TTS voice while in this node. */
  voice?: string;
  /** LLM temperature while in this node. */
  temperature?: number;
  /** `tool` nodes: the tool to run, its arguments (templates) and the variable receiving the result. */
  tool_name?: string;
  tool_arguments?: Record<string, unknown>;
  result_variable?: string;
  /** `transfer` nodes: where to (a phone number or queue name, recorded). */
  transfer_to?: string;
}

export interface FlowEdgeConfig {
  from: string;
  to: string;
  /** When to take it (the edge's `condition`, else the target's label): the function's description. */
  description: string;
}

export interface FlowVariableConfig {
  name: string;
  type: FlowVariableType;
}

export interface FlowConfig {
  start_node_id: string;
  nodes: FlowNodeConfig[];
  edges: FlowEdgeConfig[];
  variables: FlowVariableConfig[];
}

/** The transition function for an edge into `nodeId` (ids are sanitised to a function name). */
export function transitionFunctionName(nodeId: string): string {
  return `${TRANSITION_PREFIX}${nodeId.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}
