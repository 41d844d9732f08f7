/**
 * Issue 23, "a rolling restart of every process while 30 calls run drops none of them": two
 * control planes (this suite's in-process one and a real `control-plane/main.ts` process) and
 * three real engine processes on the machine's Postgres and Redis, 30 live browser calls.
 *
 * Every engine node is replaced in turn the way an orchestrator does it: a new node starts, the
 * old one gets SIGTERM and drains. While it drains, its calls are answered (a text turn, half of
 * them routed through the other control plane) and then end the way calls end, by the caller
 * hanging up; a new call replaces each (it must land on a node that is not draining). Then the
 * control-plane process is restarted. At the end: every call that ended was ended by its caller
 * (none `server_shutdown`, none `node_lost`), every call still up answers a text turn, and the
 * result table is printed. Browser calls here carry text turns, not audio (no real-time stream).
 * A call counts once it answered its first turn (`establishedCall`: a socket that drops right at
 * connect, a separate issue, is replaced and counted in the table).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { buildChild } from '../helpers/child-build.js';
import { until } from '../helpers/campaigns.js';
import { startControlPlaneChild, startEngineChild, type EngineChild } from '../helpers/engine-child.js';
import { api } from '../helpers/accounts.js';
import { TEST_REDIS_URL } from '../helpers/infra.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { connectDrops, establishedCall } from '../helpers/established-call.js';

const CALLS = 30;

let h: TelephonyHarness;
let dir = '';
let agentId = '';
const procs: EngineChild[] = [];

interface LiveCall {
  sessionId: string;
  client: VoiceClient;
  port: number;
  hungUp: boolean;
}
const calls: LiveCall[] = [];

beforeAll(async () => {
  h = await startTelephonyHarness({ app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, nodeSweepIntervalS: 1 } });
  await h.engine.close();
  agentId = await h.createAgent({ welcome: '' });
  dir = buildChild([]);
}, 60_000);

afterAll(async () => {
  for (const c of calls) c.client.close();
  for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const opts = () => ({ dir, schema: h.infra.schema, registryPrefix: h.infra.registryPrefix, redisUrl: TEST_REDIS_URL });

async function engine(): Promise<EngineChild> {
  const e = await startEngineChild(opts());
  procs.push(e);
  return e;
}

async function controlPlane(): Promise<EngineChild> {
  const c = await startControlPlaneChild({ ...opts(), secretsKey: h.infra.config.secretsKey! });
  procs.push(c);
  return c;
}

const viaPort = (port: number) => ({ port });

async function startCall(cpPort: number): Promise<LiveCall> {
  const call: LiveCall = { ...(await establishedCall(cpPort, agentId)), hungUp: false };
  calls.push(call);
  return call;
}

/** A caller text routed through `cpPort` and the agent's answer (its LLM reply) on the socket. */
async function textTurn(call: LiveCall, cpPort: number): Promise<void> {
  const from = call.client.events.length;
  const r = await api(viaPort(cpPort), 'POST', `/api/v1/voice/sessions/${call.sessionId}/text`, { body: { text: 'Still with me?' } });
  expect(r.status, `${JSON.stringify(r.body)} (socket close code ${call.client.closeCode})`).toBe(200);
  await call.client.waitFor((e) => e.type === 'llm_end', 20_000, from);
}

describe('rolling restart of every process with 30 live calls', () => {
  it('drops no call', { timeout: 240_000 }, async () => {
    const rows: string[] = [];
    const t0 = performance.now();
    const at = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
    let engines: EngineChild[] = await Promise.all([engine(), engine(), engine()]);
    let cpB = await controlPlane();
    const cps = () => [h.app.port, cpB.port];
    for (let i = 0; i < CALLS; i++) await startCall(cps()[i % 2]!);
    const perNode = engines.map((e) => calls.filter((c) => c.port === e.port).length);
    rows.push(`| ${at()} | ${CALLS} calls up | per node ${perNode.join(' / ')} |`);
    expect(perNode.every((n) => n > 0)).toBe(true);

    for (const [i, old] of engines.entries()) {
      const fresh = await engine();
      const drainAt = performance.now();
      old.proc.kill('SIGTERM');
      await until(async () => (await h.infra.registry.nodes.listNodes()).some((n) => n.nodeId === old.nodeId && n.draining), 10_000, 'draining mark');
      const onOld = calls.filter((c) => c.port === old.port && !c.hungUp);
      // Its calls go on while it drains (half of the turns through the other control plane)...
      await Promise.all(onOld.map((c, k) => textTurn(c, cps()[k % 2]!)));
      // ...and end the way calls end: the caller hangs up. Each is replaced by a new call.
      for (const c of onOld) {
        c.hungUp = true;
        c.client.close();
      }
      const replacements = [];
      for (let k = 0; k < onOld.length; k++) replacements.push(await startCall(cps()[k % 2]!));
      expect(replacements.filter((c) => c.port === old.port)).toHaveLength(0);
      const exit = await old.exited;
      expect(exit.code).toBe(0);
      rows.push(`| ${at()} | engine ${i + 1} replaced | ${onOld.length} calls answered while draining, then hung up by their callers; drained and exited 0 in ${((exit.atMs - drainAt) / 1000).toFixed(1)} s |`);
      engines = engines.map((e) => (e === old ? fresh : e));
    }

    // The control-plane process: SIGTERM, a new one, then turns routed through it.
    const cpStop = performance.now();
    cpB.proc.kill('SIGTERM');
    expect((await cpB.exited).code).toBe(0);
    cpB = await controlPlane();
    const live = calls.filter((c) => !c.hungUp);
    expect(live).toHaveLength(CALLS);
    await Promise.all(live.map((c) => textTurn(c, cpB.port)));
    rows.push(`| ${at()} | control plane process restarted in ${((performance.now() - cpStop) / 1000).toFixed(1)} s | all ${live.length} live calls answered a turn through the new one |`);

    // Nothing dropped: every ended call was ended by its caller, every live call is up.
    const ended = calls.filter((c) => c.hungUp);
    await until(async () => (await h.infra.sql`select id from conversations where session_id = any(${h.infra.sql.array(ended.map((c) => c.sessionId))}) and status = 'active'`).length === 0, 15_000, 'ended calls recorded');
    const reasons = await h.infra.sql<Array<{ reason: string | null; n: number }>>`
      select metadata->>'end_reason' as reason, count(*)::int as n from conversations
      where session_id = any(${h.infra.sql.array(ended.map((c) => c.sessionId))}) group by 1`;
    for (const r of reasons) expect(['server_shutdown', 'node_lost', 'error']).not.toContain(r.reason);
    const activeRows = await h.infra.sql`select id from conversations where session_id = any(${h.infra.sql.array(live.map((c) => c.sessionId))}) and status = 'active'`;
    expect(activeRows).toHaveLength(CALLS);
    for (const c of live) {
      expect(c.client.closeCode).toBeUndefined();
      expect(c.client.types()).not.toContain('call_ended');
    }
    rows.push(`| ${at()} | result | ${calls.length} calls in all: ${ended.length} ended by their callers (${reasons.map((r) => `${r.reason}: ${r.n}`).join(', ')}), ${live.length} still up, 0 dropped (sockets that dropped at connect, before their first turn, and were replaced: ${connectDrops.count}) |`);
    console.log(['| at | step | outcome |', '|---|---|---|', ...rows].join('\n'));
  });
});
