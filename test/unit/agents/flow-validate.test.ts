import { describe, expect, it } from 'vitest';
import { checkFlowInput, validateFlow } from '../../../control-plane/agents/flow/validate.js';
import type { FlowGraphJson } from '../../../control-plane/agents/types.js';
import { AppError } from '../../../shared/errors.js';

const n = (id: string, type = 'prompt') => ({ id, type, label: id });
const e = (from: string, to: string) => ({ from, to });
const codes = (g: FlowGraphJson) => Object.fromEntries(validateFlow(g).map((x) => [x.code, x.node_ids]));

describe('validateFlow', () => {
  const cases: Array<{ name: string; graph: FlowGraphJson; expected: Record<string, string[]> }> = [
    { name: 'valid linear flow', graph: { nodes: [n('s', 'start'), n('p'), n('x', 'end')], edges: [e('s', 'p'), e('p', 'x')], start_node_id: 's' }, expected: {} },
    { name: 'cycles are fine', graph: { nodes: [n('s', 'start'), n('a'), n('b')], edges: [e('s', 'a'), e('a', 'b'), e('b', 'a')], start_node_id: 's' }, expected: {} },
    {
      name: 'a cycle of tool nodes only never gives the caller a turn',
      graph: {
        nodes: [n('s', 'start'), { ...n('t1', 'tool'), config: { tool_name: 'a' } }, { ...n('t2', 'tool'), config: { tool_name: 'b' } }],
        edges: [e('s', 't1'), e('t1', 't2'), e('t2', 't1')],
        start_node_id: 's',
      },
      expected: { TOOL_NODE_CYCLE: ['t1', 't2'] },
    },
    {
      name: 'a tool loop through a prompt node is fine',
      graph: { nodes: [n('s', 'start'), { ...n('t', 'tool'), config: { tool_name: 'a' } }, n('p')], edges: [e('s', 't'), e('t', 'p'), e('p', 't')], start_node_id: 's' },
      expected: {},
    },
    { name: 'two edges between the same nodes', graph: { nodes: [n('s', 'start'), n('a')], edges: [e('s', 'a'), e('s', 'a')], start_node_id: 's' }, expected: { DUPLICATE_EDGE: ['s'] } },
    { name: 'empty graph', graph: { nodes: [], edges: [], start_node_id: '' }, expected: { MISSING_START_NODE: [] } },
    { name: 'start id not among nodes', graph: { nodes: [n('p')], edges: [], start_node_id: 'nope' }, expected: { MISSING_START_NODE: ['nope'] } },
    { name: 'start of the wrong type', graph: { nodes: [n('p')], edges: [], start_node_id: 'p' }, expected: { START_NODE_WRONG_TYPE: ['p'] } },
    {
      name: 'two start nodes',
      graph: { nodes: [n('s', 'start'), n('t', 'start')], edges: [e('s', 't')], start_node_id: 's' },
      expected: { MULTIPLE_START_NODES: ['s', 't'] },
    },
    { name: 'duplicate ids', graph: { nodes: [n('s', 'start'), n('a'), n('a')], edges: [e('s', 'a')], start_node_id: 's' }, expected: { DUPLICATE_NODE_ID: ['a'] } },
    { name: 'missing id', graph: { nodes: [n('s', 'start'), n('')], edges: [], start_node_id: 's' }, expected: { MISSING_NODE_ID: [''] } },
    { name: 'unknown type', graph: { nodes: [n('s', 'start'), n('w', 'wizard')], edges: [e('s', 'w')], start_node_id: 's' }, expected: { UNKNOWN_NODE_TYPE: ['w'] } },
    {
      name: 'edges to unknown nodes',
      graph: { nodes: [n('s', 'start')], edges: [e('s', 'ghost'), e('ghost', 'ghost2')], start_node_id: 's' },
      expected: { EDGE_UNKNOWN_NODE: ['ghost', 'ghost2'] },
    },
    {
      name: 'unreachable nodes (edges point the other way)',
      graph: { nodes: [n('s', 'start'), n('a'), n('b')], edges: [e('a', 's'), e('b', 'a')], start_node_id: 's' },
      expected: { UNREACHABLE_NODE: ['a', 'b'] },
    },
    {
      name: 'every node type the engine runs',
      graph: {
        nodes: [n('s', 'start'), n('p'), { ...n('t', 'tool'), config: { tool_name: 'lookup' } }, n('q'), n('h', 'transfer'), n('x', 'end')],
        edges: [e('s', 'p'), e('p', 't'), e('t', 'q'), e('q', 'h'), e('q', 'x')],
        start_node_id: 's',
      },
      expected: {},
    },
    {
      name: 'condition nodes are not run by the engine, so not accepted',
      graph: { nodes: [n('s', 'start'), n('c', 'condition')], edges: [e('s', 'c')], start_node_id: 's' },
      expected: { UNKNOWN_NODE_TYPE: ['c'] },
    },
    {
      name: 'tool nodes need a tool name and exactly one way out',
      graph: { nodes: [n('s', 'start'), n('t', 'tool'), n('a'), n('b')], edges: [e('s', 't'), e('t', 'a'), e('t', 'b')], start_node_id: 's' },
      expected: { TOOL_NODE_WITHOUT_TOOL: ['t'], TOOL_NODE_EDGES: ['t'] },
    },
    {
      name: 'end and transfer nodes have no outgoing edges',
      graph: { nodes: [n('s', 'start'), n('x', 'end'), n('h', 'transfer')], edges: [e('s', 'x'), e('x', 'h'), e('h', 's')], start_node_id: 's' },
      expected: { TERMINAL_NODE_HAS_EDGES: ['x', 'h'] },
    },
    {
      name: 'node config fields of the wrong type',
      graph: {
        nodes: [n('s', 'start'), { ...n('p'), config: { instructions: 42 } }, { ...n('q'), config: { temperature: 3 } }, { ...n('r'), config: { tools: ['a', 1] } }],
        edges: [e('s', 'p'), e('p', 'q'), e('q', 'r')],
        start_node_id: 's',
      },
      expected: { INVALID_NODE_CONFIG: ['p', 'q', 'r'] },
    },
    {
      name: 'ids that collide as function names',
      graph: { nodes: [n('s', 'start'), n('a.b'), n('a_b')], edges: [e('s', 'a.b'), e('s', 'a_b')], start_node_id: 's' },
      expected: { TRANSITION_NAME_CLASH: ['a.b', 'a_b'] },
    },
  ];
  for (const c of cases) it(c.name, () => expect(codes(c.graph)).toEqual(c.expected));

  it('every error has a message', () => {
    for (const err of validateFlow({ nodes: [n('p'), n('p')], edges: [e('p', 'q')], start_node_id: 'p' })) expect(err.message.length).toBeGreaterThan(0);
  });
});

describe('checkFlowInput', () => {
  const g: FlowGraphJson = { nodes: [], edges: [], start_node_id: '' };
  const field = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      return (err as AppError).details?.[0]?.field;
    }
    return undefined;
  };
  it('accepts declared variables', () => expect(field(() => checkFlowInput(g, [{ name: 'order_id', type: 'string' }, { name: '_n', type: 'integer' }]))).toBeUndefined());
  it('rejects bad names, types and duplicates', () => {
    expect(field(() => checkFlowInput(g, [{ name: 'has space', type: 'string' }]))).toBe('variables[0].name');
    expect(field(() => checkFlowInput(g, [{ name: 'a', type: 'uuid' }]))).toBe('variables[0].type');
    expect(field(() => checkFlowInput(g, [{ name: 'a', type: 'string' }, { name: 'a', type: 'string' }]))).toBe('variables[1].name');
  });
  it('bounds the graph', () => {
    const many = { ...g, nodes: Array.from({ length: 501 }, (_, i) => n(`n${i}`)) };
    expect(field(() => checkFlowInput(many, []))).toBe('graph.nodes');
    expect(field(() => checkFlowInput({ ...g, nodes: [n('x'.repeat(129))] }, []))).toBe('graph.nodes[0].id');
  });
});
