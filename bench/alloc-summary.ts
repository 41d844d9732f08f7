/**
 * Summarises a sampling heap profile (`bench/engine/alloc-sampler.ts`, or Chrome DevTools'
 * "allocation sampling"): bytes allocated by function, self and inclusive, largest first.
 *
 *   node dist-bench/bench/alloc-summary.js <file.heapprofile> [--top 30]
 */
import { readFileSync } from 'node:fs';
import { benchArgs } from './lib/args.js';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const { values, positionals } = benchArgs({ options: { top: { type: 'string' } }, allowPositionals: true });
const file = positionals[0];
if (!file) throw new Error('usage: alloc-summary.js <file.heapprofile> [--top 30]');
const top = Number(values.top ?? 30);
const head = (JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode }).head;

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
const name = (n: ProfileNode): string =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*?\/(dist-bench|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;

// Iterative walk: allocation stacks can be deep (async generators, promise chains).
const stack: Array<{ node: ProfileNode; above: ReadonlySet<string> }> = [{ node: head, above: new Set() }];
while (stack.length) {
  const { node, above } = stack.pop()!;
  const key = name(node);
  total += node.selfSize;
  self.set(key, (self.get(key) ?? 0) + node.selfSize);
  const here = new Set(above).add(key);
  for (const k of here) inclusive.set(k, (inclusive.get(k) ?? 0) + node.selfSize);
  for (const child of node.children) stack.push({ node: child, above: here });
}

const rows = (m: Map<string, number>): string =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `${(v / 1e6).toFixed(1).padStart(8)} MB ${((100 * v) / Math.max(1, total)).toFixed(1).padStart(5)} %  ${k}`)
    .join('\n');
console.log(`sampled: ${(total / 1e6).toFixed(1)} MB\n\nself:\n${rows(self)}\n\ninclusive:\n${rows(inclusive)}`);
