/**
 * Summarises a Linux `perf` profile of a bench child: self time by frame and inclusive time by
 * JavaScript function, optionally within a time window (one measurement of an alternating run).
 *
 *   BENCH_CHILD_NODE_FLAGS=--perf-basic-prof node dist-bench/bench/rest.js --only agent ... &
 *   perf record -e cpu-clock -F 1999 -g -p <child pid> -o rest.perf -- sleep 20
 *   perf script -i rest.perf | node dist-bench/bench/perf-summary.js [--from <s>] [--to <s>] [--top 40] [--only <regex>]
 *
 * Why not V8's `--cpu-prof` alone: it charges time spent in native code to the last native
 * function it saw. On the REST path it put 50-60 % of the server's time in `writev`; `perf` with
 * the same load puts the write system call at ~17 % and the rest in JavaScript and V8 (measured
 * 2026-11-28, docs/benchmarks.md "Profiles"). `--from/--to` are perf's own timestamps (seconds,
 * as printed in the sample headers); `--only` keeps samples whose stack has a frame matching it.
 */
import readline from 'node:readline';
import { benchArgs } from './lib/args.js';

const { values } = benchArgs({ options: { from: { type: 'string' }, to: { type: 'string' }, top: { type: 'string' }, only: { type: 'string' } } });
const from = Number(values.from ?? -Infinity);
const to = Number(values.to ?? Infinity);
const top = Number(values.top ?? 40);
const only = values.only ? new RegExp(values.only) : undefined;

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
let stack: string[] = [];
let inWindow = true;

/** `    7fdf5c2b724a JS:*handle file:///.../rest.js:23:33+0xcac (/tmp/perf-1.map)` -> `JS:*handle .../rest.js:23:33`. */
function frameName(line: string): string {
  return line
    .trim()
    .replace(/^[0-9a-f]+\s+/, '')
    .replace(/\s+\([^)]*\)$/, '')
    .replace(/\+0x[0-9a-f]+$/, '')
    .replace(/file:\/\/\S*?\/(dist-bench|node_modules)\//, '$1/');
}

function flush(): void {
  if (stack.length === 0) return;
  const frames = stack;
  stack = [];
  if (only && !frames.some((f) => only.test(f))) return;
  total++;
  self.set(frames[0]!, (self.get(frames[0]!) ?? 0) + 1);
  for (const f of new Set(frames)) inclusive.set(f, (inclusive.get(f) ?? 0) + 1);
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (line.trim() === '') return flush();
  if (!/^\s/.test(line)) {
    // A sample header: `node 1234 [000] 2270.557123: 500500 cpu-clock:`
    flush();
    const m = / (\d+\.\d+):/.exec(line);
    inWindow = !m || (Number(m[1]) >= from && Number(m[1]) <= to);
    return;
  }
  if (inWindow) stack.push(frameName(line));
});
rl.on('close', () => {
  flush();
  const pct = (n: number) => `${((100 * n) / Math.max(1, total)).toFixed(1).padStart(5)} %`;
  const rows = (m: Map<string, number>, keep: (f: string) => boolean) =>
    [...m]
      .filter(([f]) => keep(f))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([f, n]) => `${pct(n)}  ${f.slice(0, 150)}`);
  console.log(`samples: ${total}${Number.isFinite(from) || Number.isFinite(to) ? ` (window ${values.from ?? '-'} .. ${values.to ?? '-'} s)` : ''}`);
  console.log('\nself (where the time is spent):');
  console.log(rows(self, () => true).join('\n'));
  console.log('\ninclusive, JavaScript functions and the system call entry:');
  console.log(rows(inclusive, (f) => f.startsWith('JS:') || f === 'do_syscall_64').join('\n'));
});
