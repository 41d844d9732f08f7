/**
 * Embedded Postgres for the zero-config start: PGlite (Postgres compiled to WASM) served over the
 * Postgres wire protocol on a loopback port, so the same postgres.js client, migrations and SQL run
 * on it. Notes from DEPENDENCIES.md: queries are serialised on one backend, LISTEN/NOTIFY does not
 * work through the socket, start-up takes a few seconds.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgres {
  url: string;
  close(): Promise<void>;
}

export async function startEmbeddedPostgres(opts: { dataDir: string; maxConnections?: number }): Promise<EmbeddedPostgres> {
  const dir = path.join(opts.dataDir, 'pg');
  await fs.mkdir(dir, { recursive: true });
  const db = await PGlite.create(dir);
  // Port 0 is not supported by the socket server's reporting, so pick a free port ourselves.
  const port = await freePort();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port, maxConnections: opts.maxConnections ?? 16 });
  await server.start();
  let closed = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async close() {
      if (closed) return;
      closed = true;
      await server.stop();
      await db.close();
    },
  };
}

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const p = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(p));
    });
  });
}
