/**
 * What N calls hold: the difference between two V8 heap snapshots (written by
 * `engine.js --heap-snapshot`: one with no call, one with the idle calls), summed by node type and
 * constructor name, per call, largest first.
 *
 *   node dist-bench/bench/heap-diff.js <base.heapsnapshot> <idle.heapsnapshot> <calls> [--top 25]
 *
 * Self sizes only (no retained sizes): a typed array's bytes show as its backing store
 * ("native: system / JSArrayBufferData"), not under the object that owns it.
 */
import fs from 'node:fs';
import { benchArgs } from './lib/args.js';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Bytes and count per "type: name" key. */
export function sumByKind(file: string): Map<string, { bytes: number; count: number }> {
  const snap = JSON.parse(fs.readFileSync(file, 'utf8')) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const typeNames = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const out = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = typeNames[snap.nodes[i + typeAt]!]!;
    // Strings and numbers are keyed by type alone: their "name" is their value.
    const name = type === 'object' || type === 'native' || type === 'closure' || type === 'hidden' || type === 'code' ? snap.strings[snap.nodes[i + nameAt]!]! : '';
    const key = name ? `${type}: ${name.slice(0, 60)}` : type;
    const e = out.get(key) ?? { bytes: 0, count: 0 };
    e.bytes += snap.nodes[i + sizeAt]!;
    e.count++;
    out.set(key, e);
  }
  return out;
}

function main(): void {
  const { positionals, values } = benchArgs({ allowPositionals: true, options: { top: { type: 'string' } } });
  const [baseFile, idleFile, callsArg] = positionals;
  const calls = Number(callsArg);
  if (!baseFile || !idleFile || !Number.isInteger(calls) || calls <= 0) {
    console.error('usage: heap-diff.js <base.heapsnapshot> <idle.heapsnapshot> <calls> [--top 25]');
    process.exit(2);
  }
  const top = Number(values.top ?? 25);
  const base = sumByKind(baseFile);
  const idle = sumByKind(idleFile);
  const rows = [...idle].map(([key, v]) => {
    const b = base.get(key) ?? { bytes: 0, count: 0 };
    return { key, bytesPerCall: (v.bytes - b.bytes) / calls, countPerCall: (v.count - b.count) / calls };
  });
  rows.sort((a, b) => b.bytesPerCall - a.bytesPerCall);
  const total = rows.reduce((s, r) => s + r.bytesPerCall, 0);
  console.log(`heap growth per call: ${(total / 1024).toFixed(1)} KiB over ${calls} calls (self sizes)`);
  console.log('bytes/call  objects/call  kind');
  for (const r of rows.slice(0, top)) console.log(`${r.bytesPerCall.toFixed(0).padStart(9)}  ${r.countPerCall.toFixed(1).padStart(12)}  ${r.key}`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
