/**
 * Issue 11, defect 1 ("the embedded default corrupts under concurrency"): with no DATABASE_URL,
 * PGlite behind one socket interleaved the wire protocol of the pool's connections, so 20 clients
 * got 1 in 3 answers 500 and reads returned other queries' bytes (`providers: []` for an agent with
 * three; 500 once it had a knowledge-base binding). This suite runs the real control plane
 * (`startInfra` + `startControlPlane`, as `npm start` does) on the embedded default and drives
 * 50 concurrent keep-alive clients through mixed writes and reads on real routes for
 * EMBEDDED_LOAD_DURATION_MS (default 20 s; shorten it locally), expecting zero errors, every read
 * right at once, and every write readable afterwards with exactly the content written.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { startInfra, type Infra } from '../../control-plane/infra.js';
import { realClock } from '../../shared/clock.js';
import { loadConfig } from '../../shared/config.js';
import { createTestUser, type TestUser } from '../helpers/accounts.js';
import { captureLogger } from '../helpers/infra.js';

/** How long the clients run. The bar is 20 s; `EMBEDDED_LOAD_DURATION_MS=3000` for a quick local pass. */
const DURATION_MS = Number(process.env.EMBEDDED_LOAD_DURATION_MS ?? 20_000);
const CLIENTS = 50;
/** Memory items the agents bind to (the binding view joins the item's title). */
const KB_ITEMS = 5;
/** Parallel reads when checking every write at the end. */
const VERIFY_PARALLEL = 20;
const REQUEST_TIMEOUT_MS = 10_000;

let dataDir: string;
let infra: Infra | undefined;
let cp: ControlPlane | undefined;
let pool: Pool | undefined;
const { logger, lines } = captureLogger('warn');

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'vp-embedded-load-'));
  const config = loadConfig(
    { DATABASE_URL: '', REDIS_URL: '', SECRETS_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: 'warn', NODE_ENV: 'test' },
    { httpPort: 0, enginePort: 0, host: '127.0.0.1', dataDir, seedDemo: false },
  );
  infra = await startInfra(config, logger, realClock);
  cp = await startControlPlane({ config, logger, clock: realClock, ...infra }, { port: 0, host: '127.0.0.1' });
  pool = new Pool(`http://127.0.0.1:${cp.port}`, { connections: CLIENTS, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
}, 60_000);

afterAll(async () => {
  await pool?.close();
  await cp?.close();
  await infra?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}, 30_000);

interface Reply {
  status: number;
  body: any;
}

async function call(method: string, p: string, token: string, body?: unknown): Promise<Reply> {
  const res = await pool!.request({
    method: method as 'GET',
    path: `/api/v1${p}`,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text: it goes into the error report
  }
  return { status: res.statusCode, body: parsed };
}

/** What one cycle wrote, checked again after the run. */
interface Written {
  agentId: string;
  name: string;
  welcome: string;
  providers: Array<{ provider_type: string; provider_name: string; model_name: string }>;
  kbId: string;
  kbTitle: string;
  conversationId: string;
  message: string;
}

/** Providers of cycle (c, i): two or three of them, models named after the cycle, so a row from another agent is visible. */
function providersFor(c: number, i: number): Written['providers'] {
  const all = [
    { provider_type: 'llm', provider_name: 'openai', model_name: `llm-${c}-${i}` },
    { provider_type: 'asr', provider_name: 'deepgram', model_name: `asr-${c}-${i}` },
    { provider_type: 'tts', provider_name: 'sim', model_name: `tts-${c}-${i}` },
  ];
  return i % 3 === 0 ? all.filter((p) => p.provider_type !== 'asr') : all;
}

function sortedProviders(list: Array<Record<string, unknown>>): string {
  return JSON.stringify(
    list.map((p) => ({ provider_type: p.provider_type, provider_name: p.provider_name, model_name: p.model_name })).sort((a, b) => String(a.provider_type).localeCompare(String(b.provider_type))),
  );
}

/** Differences between what GET /agents/{id} shows and what was written ([] when right). */
function agentProblems(w: Written, detail: any): string[] {
  const out: string[] = [];
  if (detail?.agent?.id !== w.agentId) out.push(`agent.id ${detail?.agent?.id}`);
  if (detail?.agent?.name !== w.name) out.push(`name ${detail?.agent?.name}`);
  if (detail?.agent?.welcome_message !== w.welcome) out.push(`welcome_message ${detail?.agent?.welcome_message}`);
  if (sortedProviders(detail?.providers ?? []) !== sortedProviders(w.providers)) out.push(`providers ${JSON.stringify(detail?.providers)}`);
  const kbs = detail?.knowledge_bases ?? [];
  if (kbs.length !== 1 || kbs[0].knowledge_base_id !== w.kbId || kbs[0].title !== w.kbTitle) out.push(`knowledge_bases ${JSON.stringify(kbs)}`);
  return out;
}

describe('the embedded default under load (issue 11, defect 1)', () => {
  let owner: TestUser;
  const kbs: Array<{ id: string; title: string }> = [];

  it(`${CLIENTS} concurrent clients, mixed reads and writes for ${DURATION_MS} ms: zero errors, every write readable`, { timeout: DURATION_MS + 120_000 }, async () => {
    expect(infra!.embeddedDb).toBe(true);
    owner = await createTestUser(cp!);
    for (let k = 0; k < KB_ITEMS; k++) {
      const title = `kb-${k}`;
      const r = await call('POST', `/auth/workspaces/${owner.workspaceId}/memory`, owner.token, { title, content: `content ${k}` });
      expect(r.status).toBe(201);
      kbs.push({ id: r.body.data.id, title });
    }

    const errors: string[] = [];
    const written: Written[] = [];
    let requests = 0;
    const expectStatus = (what: string, r: Reply, status: number): boolean => {
      requests++;
      if (r.status === status) return true;
      errors.push(`${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      return false;
    };
    const deadline = performance.now() + DURATION_MS;

    const client = async (c: number): Promise<void> => {
      const mine: Written[] = [];
      for (let i = 0; performance.now() < deadline && errors.length < 50; i++) {
        const name = `agent-${c}-${i}`;
        const created = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name, system_prompt: `You are ${name}.` });
        if (!expectStatus('create agent', created, 201)) continue;
        const agentId: string = created.body.data.id;
        const providers = providersFor(c, i);
        let ok = true;
        for (const p of providers) ok = expectStatus(`upsert ${p.provider_type}`, await call('POST', `/agents/${agentId}/providers`, owner.token, p), 200) && ok;
        const kb = kbs[(c + i) % kbs.length]!;
        ok = expectStatus('bind kb', await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: kb.id, mode: i % 2 ? 'always' : 'on_demand' }), 201) && ok;
        const w: Written = { agentId, name: `${name}-v2`, welcome: `Hello from ${name}`, providers, kbId: kb.id, kbTitle: kb.title, conversationId: '', message: `said by ${name}` };
        ok = expectStatus('update agent', await call('PUT', `/agents/${agentId}`, owner.token, { name: w.name, welcome_message: w.welcome }), 200) && ok;
        // Read your own write at once: the PGlite default answered `providers: []` or 500 here.
        const detail = await call('GET', `/agents/${agentId}`, owner.token);
        if (expectStatus('get agent', detail, 200)) for (const p of agentProblems(w, detail.body.data)) errors.push(`get agent ${agentId} right after writing: ${p}`);
        // And an older agent of this client, while the others write.
        const older = mine[i % Math.max(1, mine.length)];
        if (older) {
          const again = await call('GET', `/agents/${older.agentId}`, owner.token);
          if (expectStatus('get older agent', again, 200)) for (const p of agentProblems(older, again.body.data)) errors.push(`get older agent ${older.agentId}: ${p}`);
        }
        const list = await call('GET', `/agents?workspace_id=${owner.workspaceId}&limit=5`, owner.token);
        if (expectStatus('list agents', list, 200) && !(Array.isArray(list.body.data) && list.body.data.length === 5)) errors.push(`list agents: ${JSON.stringify(list.body).slice(0, 300)}`);
        const conv = await call('POST', '/conversations', owner.token, { session_id: `load-${c}-${i}-${randomBytes(3).toString('hex')}`, agent_id: agentId });
        if (expectStatus('create conversation', conv, 201)) {
          w.conversationId = conv.body.data.id;
          ok = expectStatus('create message', await call('POST', '/conversations/messages', owner.token, { conversation_id: w.conversationId, role: 'user', content: w.message, turn_number: 1 }), 201) && ok;
        } else ok = false;
        if (ok) mine.push(w);
      }
      written.push(...mine);
    };

    const t0 = performance.now();
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    const seconds = (performance.now() - t0) / 1000;
    console.log(`embedded load: ${CLIENTS} clients, ${requests} requests in ${seconds.toFixed(1)} s = ${Math.round(requests / seconds)} req/s, ${written.length} agents written, ${errors.length} errors`);
    expect(errors).toEqual([]);
    expect(written.length).toBeGreaterThan(CLIENTS);

    // Every write, read back afterwards: the agent detail (providers, binding with the item's
    // title, fields) and the conversation with its message.
    const problems: string[] = [];
    for (let start = 0; start < written.length; start += VERIFY_PARALLEL) {
      await Promise.all(
        written.slice(start, start + VERIFY_PARALLEL).map(async (w) => {
          const detail = await call('GET', `/agents/${w.agentId}`, owner.token);
          if (detail.status !== 200) problems.push(`agent ${w.agentId}: ${detail.status}`);
          else for (const p of agentProblems(w, detail.body.data)) problems.push(`agent ${w.agentId}: ${p}`);
          const conv = await call('GET', `/conversations/${w.conversationId}`, owner.token);
          const messages = conv.body?.data?.messages ?? [];
          if (conv.status !== 200 || conv.body.data.conversation?.agent_id !== w.agentId || messages.length !== 1 || messages[0].content !== w.message) {
            problems.push(`conversation ${w.conversationId}: ${conv.status} ${JSON.stringify(conv.body).slice(0, 300)}`);
          }
        }),
      );
    }
    expect(problems).toEqual([]);
    const agentRows = await infra!.sql<{ n: number }[]>`select count(*)::int as n from agents where workspace_id = ${owner.workspaceId}`;
    expect(agentRows[0]!.n).toBeGreaterThanOrEqual(written.length);
    // Nothing went wrong on the server side either.
    expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
  });
});
