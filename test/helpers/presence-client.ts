/**
 * A human agent's presence socket (`/api/v1/sessions/ws`, docs/portal.md) as the portal tests
 * drive it: messages queue until a test asks for the next one (of a type).
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { expect } from 'vitest';
import type { TelephonyHarness } from '../carrier-sim/harness.js';
import { api } from './accounts.js';

export interface PresenceClient {
  ws: WebSocket;
  /** Resolves with the close code. */
  closed: Promise<number>;
  /** Messages received and not taken yet. */
  queued(): readonly any[];
  open(): Promise<void>;
  send(m: unknown): void;
  /** The next message; with `type`, the next of that type (others, e.g. status echoes, are skipped). */
  next(type?: string): Promise<any>;
}

export function presenceClient(port: number): PresenceClient {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/sessions/ws`);
  const queue: any[] = [];
  const waiters: Array<(m: any) => void> = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d));
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  const one = (): Promise<any> => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve)));
  return {
    ws,
    closed,
    queued: () => queue,
    open: () => new Promise<void>((resolve, reject) => (ws.readyState === ws.OPEN ? resolve() : (ws.once('open', () => resolve()), ws.once('error', reject)))),
    send: (m: unknown) => ws.send(JSON.stringify(m)),
    async next(type?: string): Promise<any> {
      for (let m = await one(); ; m = await one()) if (type === undefined || m.type === type) return m;
    },
  };
}

/**
 * A person on the roster of the harness's workspace, with a password, logged in on the presence
 * socket (`ready` received).
 */
export async function humanOnPresence(h: TelephonyHarness, o: { displayName: string; maxConcurrentCalls?: number }): Promise<{ humanId: string; presence: PresenceClient }> {
  const code = `p-${randomBytes(4).toString('hex')}`;
  const password = `${o.displayName.toLowerCase()}-password`;
  const created = await h.call('POST', '/call-center/agents', { workspace_id: h.user.workspaceId, display_name: o.displayName, agent_code: code, ...(o.maxConcurrentCalls ? { max_concurrent_calls: o.maxConcurrentCalls } : {}) });
  const humanId = created.body.data.id as string;
  expect((await h.call('POST', '/agent-portal/admin/set-password', { agent_id: humanId, password })).status).toBe(200);
  const login = await api(h.app, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: h.user.workspaceId, agent_code: code, password } });
  const presence = presenceClient(h.app.port);
  await presence.open();
  presence.send({ type: 'login', token: login.body.data.token });
  await presence.next('ready');
  return { humanId, presence };
}
