/**
 * Child processes for benchmarks: the measured server and the load generator never share an event
 * loop. `forkChild` starts a compiled bench module with an IPC channel and a request/reply helper;
 * `serveParent` is the child's side. Messages are plain JSON-able objects.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';

interface Request {
  id: number;
  method: string;
  params: unknown;
}
interface Reply {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

export interface Child {
  proc: ChildProcess;
  /** Calls `method` in the child and resolves with its result (rejects on error or child exit). */
  call<T = unknown>(method: string, params?: unknown, timeoutMs?: number): Promise<T>;
  /** Messages the child sends on its own (`notify`). */
  onNotify(handler: (msg: { notify: string; data: unknown }) => void): void;
  /** Asks the child to exit (method `exit`), then kills it after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface ForkOptions {
  /** Extra node flags, e.g. ['--expose-gc', '--cpu-prof']. */
  execArgv?: string[];
  env?: NodeJS.ProcessEnv;
  /** Inherit stdout/stderr (default true), so a crashing child is visible. */
  inheritOutput?: boolean;
}

/**
 * Node flags added to every bench child from the environment, e.g.
 * `BENCH_CHILD_NODE_FLAGS='--perf-basic-prof'` to attribute `perf record` samples to JavaScript
 * functions (V8's own `--cpu-prof` charges time to the last native call, e.g. `writev`, and is
 * misleading on this path; see docs/benchmarks.md "Profiles").
 */
const envFlags = (process.env.BENCH_CHILD_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);

/** Forks `dist-bench/bench/<relPath>` (a module that calls `serveParent`) and waits for its `ready`. */
export async function forkChild(relPath: string, args: string[] = [], opts: ForkOptions = {}): Promise<Child> {
  const file = path.resolve(import.meta.dirname, '..', relPath);
  const proc = fork(file, args, {
    execArgv: [...(opts.execArgv ?? []), ...envFlags],
    env: opts.env ?? process.env,
    stdio: opts.inheritOutput === false ? ['ignore', 'ignore', 'inherit', 'ipc'] : ['inherit', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
  });
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout }>();
  const notifyHandlers: Array<(msg: { notify: string; data: unknown }) => void> = [];
  let exited = false;
  const exitP = new Promise<void>((resolve) => {
    proc.on('exit', (code, signal) => {
      exited = true;
      for (const p of pending.values()) p.reject(new Error(`${relPath} exited (code ${code}, signal ${signal})`));
      pending.clear();
      resolve();
    });
  });
  const ready = new Promise<void>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`${relPath} exited before ready (code ${code})`)));
    proc.on('message', (raw) => {
      const msg = raw as Reply & { notify?: string; data?: unknown; ready?: boolean };
      if (msg.ready) return resolve();
      if (msg.notify) {
        for (const h of notifyHandlers) h(msg as { notify: string; data: unknown });
        return;
      }
      const p = pending.get(msg.id);
      if (!p) return;
      pending.delete(msg.id);
      if (p.timer) clearTimeout(p.timer);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new Error(`${relPath}: ${msg.error}`));
    });
  });
  await ready;
  return {
    proc,
    call<T>(method: string, params?: unknown, timeoutMs = 120_000): Promise<T> {
      if (exited) return Promise.reject(new Error(`${relPath} has exited`));
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`${relPath}: ${method} timed out after ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
        proc.send({ id, method, params } satisfies Request);
      });
    },
    onNotify(handler) {
      notifyHandlers.push(handler);
    },
    async stop(graceMs = 10_000) {
      if (exited) return;
      proc.send({ id: 0, method: 'exit', params: null } satisfies Request);
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exitP;
      clearTimeout(timer);
    },
  };
}

export type Handlers = Record<string, (params: any) => unknown | Promise<unknown>>;

/**
 * The child's side: answers requests with `handlers`; `exit` runs `onExit` (if any) then exits.
 * Call once the child is ready to take requests.
 */
export function serveParent(handlers: Handlers, onExit?: () => Promise<void> | void): void {
  if (!process.send) throw new Error('serveParent: not started with an IPC channel (use forkChild)');
  process.on('message', (raw) => {
    const req = raw as Request;
    if (req.method === 'exit') {
      void Promise.resolve(onExit?.())
        .catch((err: Error) => console.error('exit handler failed:', err.message))
        .finally(() => process.exit(0));
      return;
    }
    const h = handlers[req.method];
    if (!h) {
      process.send!({ id: req.id, ok: false, error: `unknown method ${req.method}` } satisfies Reply);
      return;
    }
    Promise.resolve()
      .then(() => h(req.params))
      .then(
        (result) => process.send!({ id: req.id, ok: true, result } satisfies Reply),
        (err: Error) => process.send!({ id: req.id, ok: false, error: err?.stack ?? String(err) } satisfies Reply),
      );
  });
  // The parent died: do not linger as an orphan holding ports.
  process.on('disconnect', () => process.exit(0));
  process.send({ ready: true });
}

export function notifyParent(notify: string, data: unknown): void {
  process.send?.({ notify, data });
}
