/**
 * Where a `flow`-mode call is in its graph (issue 19; docs/flows.md): the current node, the path
 * taken, the variables collected. The actor owns one; each agent run works on a copy (`clone`),
 * which the run's transition and variable functions move at once so the run's next LLM step already
 * has the new node's instructions and tools. The run reports each move as an effect with its tool
 * result, and the actor applies it to its own state only while that run is current (superseded
 * runs' messages are dropped by `AgentRuns`): a superseded turn never moves the node, and a
 * barge-in leaves the call in the node it had reached.
 */
import type { FlowConfig, FlowEdgeConfig, FlowNodeConfig } from '../../shared/voice/flow.js';
import { substitute } from '../../shared/voice/templates.js';

export type { FlowEffect } from '../../shared/voice/flow.js';
import type { FlowEffect } from '../../shared/voice/flow.js';

/** Longest node path kept for the record (a looping flow must not grow it without bound). */
export const MAX_NODE_PATH = 500;

export class FlowState {
  private nodeId: string;
  readonly path: string[];
  readonly variables: Record<string, unknown>;
  private readonly nodes: Map<string, FlowNodeConfig>;

  constructor(
    readonly flow: FlowConfig,
    /** Session dynamic variables: available as `{{name}}` beside the collected ones. */
    private readonly dynamicVariables: Readonly<Record<string, string>>,
    from?: FlowState,
  ) {
    this.nodes = from?.nodes ?? new Map(flow.nodes.map((n) => [n.id, n]));
    this.nodeId = from?.nodeId ?? flow.start_node_id;
    this.path = from ? [...from.path] : [flow.start_node_id];
    this.variables = from ? { ...from.variables } : {};
  }

  /** A copy for one run. */
  clone(): FlowState {
    return new FlowState(this.flow, this.dynamicVariables, this);
  }

  get node(): FlowNodeConfig {
    return this.nodes.get(this.nodeId)!;
  }

  nodeById(id: string): FlowNodeConfig | undefined {
    return this.nodes.get(id);
  }

  /** The call is over once it stands in an `end` or `transfer` node. */
  get terminal(): boolean {
    return this.node.type === 'end' || this.node.type === 'transfer';
  }

  /** Edges leaving the current node. */
  outgoing(): FlowEdgeConfig[] {
    return this.flow.edges.filter((e) => e.from === this.nodeId);
  }

  apply(effect: FlowEffect): void {
    if (effect.kind === 'set') {
      this.variables[effect.name] = effect.value;
      return;
    }
    if (!this.nodes.has(effect.nodeId)) return;
    this.nodeId = effect.nodeId;
    if (this.path.length < MAX_NODE_PATH) this.path.push(effect.nodeId);
  }

  /** `{{name}}` with collected variables first, then the session's dynamic variables. */
  fill(text: string): string {
    return substitute(text, { ...this.dynamicVariables, ...this.variables });
  }

  /**
   * The system prompt of the current node: the call's prompt (agent prompt, context, knowledge),
   * then this node's instructions, what is known so far, and how to move on.
   */
  systemPrompt(base: string, transitionNames: Array<{ name: string; description: string }>): string {
    const node = this.node;
    const parts = [base.trim(), `## Current step: ${node.label || node.id}`];
    const instructions = this.fill(node.instructions).trim();
    if (instructions) parts.push(instructions);
    const known = Object.entries(this.variables);
    if (known.length) parts.push(`## Collected so far\n${known.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n')}`);
    if (transitionNames.length) {
      parts.push(
        `## Moving on\nWhen this step is done, call exactly one of these functions (then keep talking as the next step says):\n` +
          transitionNames.map((t) => `- ${t.name}: ${t.description}`).join('\n'),
      );
    }
    return parts.filter(Boolean).join('\n\n');
  }
}
