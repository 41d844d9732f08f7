/**
 * `parseArgs` for the bench entry points: `--help` lists the options, and an unknown option or a
 * missing value prints that list and exits 2 (it was a TypeError with a stack trace).
 */
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';

export function benchArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const withHelp = { ...config, options: { ...config.options, help: { type: 'boolean' } } } as T;
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs(withHelp);
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage(config)}`);
    process.exit(2);
  }
  if ((parsed.values as { help?: boolean }).help) {
    console.log(usage(config));
    process.exit(0);
  }
  return parsed;
}

function usage(config: ParseArgsConfig): string {
  const script = path.relative(process.cwd(), process.argv[1] ?? 'bench');
  const options = Object.entries(config.options ?? {}).map(([name, o]) => (o.type === 'boolean' ? `[--${name}]` : `[--${name} <value>]`));
  return `usage: node ${script} ${options.join(' ')}${config.allowPositionals ? ' [args...]' : ''}\n(docs/benchmarks.md explains each option)`;
}
