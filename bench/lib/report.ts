/**
 * Output shared by every bench script: the machine block, settings, aligned tables, and the dated
 * section appended to bench/RESULTS.md (settings travel with the results).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where results accumulate (history is kept: sections are appended, never rewritten). */
export const RESULTS_FILE = path.resolve(import.meta.dirname, '../../../bench/RESULTS.md');

export interface Machine {
  cpuModel: string;
  cores: number;
  memGiB: number;
  node: string;
  /** 1-minute load average when the bench started: other work on a shared machine shows here. */
  loadAvg1: number;
}

export function machine(): Machine {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown cpu',
    cores: os.cpus().length,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    loadAvg1: os.loadavg()[0]!,
  };
}

export function machineLine(m: Machine = machine()): string {
  return `${m.cpuModel} x${m.cores}, ${m.memGiB} GiB, node ${m.node}, load average ${m.loadAvg1.toFixed(1)} at start`;
}

export type Cell = string | number | undefined;

/** Formats a number for a table: fixed decimals, thousands separators, '-' for undefined/NaN. */
export function num(v: number | undefined, decimals = 0): string {
  if (v === undefined || !Number.isFinite(v)) return '-';
  return v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** A fixed-width text table: the first `leftCols` columns (default 1) left-aligned, the rest right-aligned. */
export function table(header: string[], rows: Cell[][], leftCols = 1): string {
  const body = rows.map((r) => r.map((c) => (c === undefined ? '-' : String(c))));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i < leftCols ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** A titled block: settings lines, then the tables, ready to print and to append. */
export interface Section {
  title: string;
  /** `key: value` lines printed above the results (the options the run used). */
  settings: Record<string, Cell>;
  /** Tables or paragraphs, printed in order. */
  blocks: string[];
  /** Free-form notes (goal verdicts, caveats), printed last. */
  notes?: string[];
}

export function renderSection(s: Section, m: Machine = machine()): string {
  const settings = Object.entries(s.settings).map(([k, v]) => `${k}: ${v ?? '-'}`);
  return [
    `${s.title}`,
    `machine: ${machineLine(m)}`,
    ...settings,
    '',
    ...s.blocks.flatMap((b) => [b, '']),
    ...(s.notes ?? []),
  ]
    .join('\n')
    .trimEnd();
}

/**
 * Appends `sections` to bench/RESULTS.md under one dated heading. The text goes in a fenced block so
 * the tables keep their alignment when rendered.
 */
export function appendResults(heading: string, sections: Section[], opts: { file?: string; command?: string } = {}): void {
  const file = opts.file ?? RESULTS_FILE;
  const m = machine();
  const stamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const parts = [
    `\n## ${stamp} — ${heading}\n`,
    `Machine: ${machineLine(m)}.${opts.command ? ` Command: \`${opts.command}\`.` : ''}\n`,
    ...sections.map((s) => ['```', renderSection(s, m), '```', ''].join('\n')),
  ];
  if (!fs.existsSync(file)) fs.writeFileSync(file, '# Benchmark results\n\nAppended by the scripts in `bench/` (newest last). See docs/benchmarks.md for what each number means.\n');
  fs.appendFileSync(file, parts.join('\n'));
}

/** The command line that produced this run, for the record. */
export function commandLine(): string {
  return ['node', path.relative(process.cwd(), process.argv[1] ?? ''), ...process.argv.slice(2)].join(' ');
}
