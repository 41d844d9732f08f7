/**
 * The published flow -> the `FlowConfig` a call runs (issue 19; node schema in docs/flows.md).
 * The graph is validated again here: a version published before the validator learned a rule
 * (e.g. `condition` nodes, which the engine does not run) must not start a call that would ignore
 * part of its graph; session start answers 409 naming the problem instead.
 */
import { AUTHORING_ONLY_CODES, validateFlow } from '../agents/flow/validate.js';
import type { SnapshotFlow } from '../agents/types.js';
import type { FlowConfig, FlowNodeConfig, FlowNodeType, FlowVariableType } from '../../shared/voice/flow.js';

export type FlowResolution = { flow: FlowConfig } | { problem: string };

export function resolveFlow(stored: SnapshotFlow | null): FlowResolution {
  if (!stored) return { problem: 'the agent is in flow mode but its published version has no flow' };
  const errors = validateFlow(stored.graph).filter((e) => !AUTHORING_ONLY_CODES.has(e.code));
  if (errors.length) return { problem: `the published flow cannot run: ${errors.map((e) => e.message).join('; ')}` };
  const g = stored.graph;
  const nodes: FlowNodeConfig[] = g.nodes.map((n) => {
    const c = (n.config ?? {}) as Record<string, unknown>;
    const node: FlowNodeConfig = {
      id: n.id,
      type: n.type as FlowNodeType,
      label: n.label,
      instructions: str(c.instructions) ?? str(c.prompt) ?? '',
    };
    if (Array.isArray(c.tools)) node.tools = c.tools as string[];
    if (Array.isArray(c.collect)) node.collect = c.collect as string[];
    if (str(c.voice)) node.voice = str(c.voice);
    if (typeof c.temperature === 'number') node.temperature = c.temperature;
    if (str(c.tool_name)) node.tool_name = str(c.tool_name);
    if (c.tool_arguments && typeof c.tool_arguments === 'object') node.tool_arguments = c.tool_arguments as Record<string, unknown>;
    if (str(c.result_variable)) node.result_variable = str(c.result_variable);
    if (str(c.transfer_to)) node.transfer_to = str(c.transfer_to);
    return node;
  });
  const byId = new Map(nodes.map((n) => [n.id, n]));
  // One transition per (from, to): a repeated edge would give the model two functions of one name.
  const seen = new Set<string>();
  const edges = g.edges.flatMap((e) => {
    const key = `${e.from}\u0000${e.to}`;
    if (seen.has(key)) return [];
    seen.add(key);
    const target = byId.get(e.to)!;
    return [{ from: e.from, to: e.to, description: e.condition?.trim() || `go to: ${target.label || target.id}` }];
  });
  return {
    flow: {
      start_node_id: g.start_node_id,
      nodes,
      edges,
      variables: stored.variables.map((v) => ({ name: v.name, type: v.type as FlowVariableType })),
    },
  };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}
