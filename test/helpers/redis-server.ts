/**
 * A Redis of a suite's own: `redis-server` on a free port, no persistence, so `restart()` brings
 * it back EMPTY (what a restart without persistence, or a failover to an empty replica, does to
 * the registry). Suites that stop Redis use this, never the machine's shared one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port.js';

export class TestRedisServer {
  private proc?: ChildProcess;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<TestRedisServer> {
    const r = new TestRedisServer(await freePort());
    await r.spawn();
    return r;
  }

  /** Stops the server (SIGTERM, waits for its exit) and starts it again, empty; resolves once it accepts connections. */
  async restart(): Promise<void> {
    await this.stop();
    await this.spawn();
  }

  /** SIGTERM and wait for the exit. Idempotent. */
  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }

  /** Resolves once the server logs that it accepts connections. */
  private spawn(): Promise<void> {
    const p = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.proc = p;
    return new Promise((resolve, reject) => {
      p.once('exit', (code) => reject(new Error(`redis-server exited (${code})`)));
      p.stdout!.on('data', (d: Buffer) => {
        if (String(d).includes('Ready to accept connections')) resolve();
      });
    });
  }
}
