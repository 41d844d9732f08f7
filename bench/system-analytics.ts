/**
 * System analytics (issue 17): `GET /analytics/latency`, `/usage`, `/tool-calls` and
 * `/system-health` over a year of seeded records, through the real control plane (HTTP, bearer
 * auth, fencing, REST envelope), against the goal "under 200 ms p95".
 *
 *   npm run build:bench && node dist-bench/bench/system-analytics.js [--conversations 200000] [--users 500] [--hot-share 0.25] [--days 365] [--nodes 10] [--runs 30] [--no-append]
 *
 * Seeding (generate_series, in a throwaway schema dropped at the end), one tenant owning all of it
 * (the worst case for workspace-wide answers): `--conversations` completed calls spread uniformly
 * over `--days` days up to now, 5 turns each (a caller and a reply message per turn, the latency
 * fields the engine writes, ~5% replies cut before audio), a tool call on ~60% of second turns (4
 * tools, ~5% errors), `--users` user ids, one "hot" agent with `--hot-share` of the calls, the rest
 * on a "typical" agent and 18 agents without rows. System health: `--nodes` engine nodes and 2
 * control planes reporting every 15 s for the 7-day retention. Then VACUUM ANALYZE.
 *
 * Each scenario: 3 warm-up requests, then `--runs` sequential requests, client-side latency. The
 * plan of the heaviest latency query is printed (EXPLAIN ANALYZE).
 */
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { startControlPlane } from '../control-plane/app.js';
import { api, createTestUser } from '../test/helpers/accounts.js';
import { startTestInfra } from '../test/helpers/infra.js';
import { createAgent } from '../test/unit/records/control-plane.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { quantile } from './lib/stats.js';

export interface SystemBenchOptions {
  conversations: number;
  users: number;
  hotShare: number;
  days: number;
  nodes: number;
  runs: number;
}

export const SYSTEM_DEFAULTS: SystemBenchOptions = { conversations: 200_000, users: 500, hotShare: 0.25, days: 365, nodes: 10, runs: 30 };
export const GOAL_P95_MS = 200;
const ORG_KEY = 'org_key_system_analytics_bench_01';

export interface SystemRow {
  route: string;
  scope: string;
  rows: number;
  p50: number;
  p95: number;
  max: number;
}

export async function runSystemAnalyticsBench(o: SystemBenchOptions, log: (l: string) => void = console.error): Promise<{ section: Section; rows: SystemRow[]; plan: string }> {
  // Seeding and VACUUM take longer than the 10 s production statement timeout.
  const infra = await startTestInfra({ dbStatementTimeoutMs: 600_000 }, { LOG_LEVEL: 'warn', ORG_API_KEY: ORG_KEY });
  const cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  try {
    const user = await createTestUser(cp);
    const hot = await createAgent(cp as never, infra, user, user.workspaceId, 'hot agent');
    const typical = await createAgent(cp as never, infra, user, user.workspaceId, 'typical agent');
    const sql = infra.sql;
    const hotPct = Math.round(o.hotShare * 1000);

    log(`[system] seeding ${num(o.conversations)} conversations over ${o.days} days`);
    const s0 = performance.now();
    await sql`
      insert into conversations (id, session_id, user_id, agent_id, workspace_id, status, total_turns, total_duration_ms, started_at, ended_at, created_at, updated_at)
      select gen_random_uuid(), 'bench-' || g, 'user-' || (g % ${o.users}),
        case when g % 1000 < ${hotPct} then ${hot}::uuid
             when (g / 1000) % 19 = 0 then ${typical}::uuid
             else md5('agent' || ((g / 1000) % 19))::uuid end,
        ${user.workspaceId}::uuid, 'completed', 5, 120000, t, t + interval '2 minutes', t, t
      from (select g, now() - random() * ${o.days} * interval '1 day' as t from generate_series(1, ${o.conversations}) g) s`;
    await sql`
      insert into messages (id, conversation_id, turn_number, role, content, asr_provider, asr_model, asr_latency_ms,
        llm_provider, llm_model, llm_latency_ms, tts_provider, tts_latency_ms, total_latency_ms, internal_overhead_ms, created_at)
      select gen_random_uuid(), z.id, n, role, 'seeded',
        case when role = 'user' then (array['deepgram', 'sim'])[1 + p] end,
        case when role = 'user' then (array['nova-2', 'sim-asr'])[1 + p] end,
        asr,
        case when role = 'assistant' then (array['openai', 'groq'])[1 + p] end,
        case when role = 'assistant' then (array['gpt-4o-mini', 'llama-3.1-8b'])[1 + p] end,
        case when role = 'assistant' then llm end,
        case when role = 'assistant' then (array['elevenlabs', 'cartesia'])[1 + p] end,
        case when role = 'assistant' then tts end,
        case when role = 'assistant' then (case when cut then 0 else asr + llm + tts + 15 end) end,
        case when role = 'assistant' then 15 end,
        z.started_at + n * interval '20 seconds' + (role = 'assistant')::int * interval '1 second'
      from (
        select c.id, c.started_at, n, (80 + random() * 300)::int as asr, (150 + random() * 700)::int as llm, (60 + random() * 250)::int as tts,
          random() < 0.05 as cut, (random() < 0.3)::int as p
        from conversations c cross join generate_series(1, 5) n
        where c.session_id like 'bench-%'
      ) z cross join (values ('user'), ('assistant')) r(role)`;
    await sql`
      insert into tool_calls (id, message_id, conversation_id, tool_name, status, latency_ms, created_at)
      select gen_random_uuid(), m.id, m.conversation_id, (array['lookup_order', 'book_slot', 'weather', 'transfer'])[1 + floor(random() * 4)::int],
        case when random() < 0.05 then 'error' else 'success' end, (20 + random() * 400)::int, m.created_at
      from messages m where m.role = 'assistant' and m.turn_number = 2 and random() < 0.6`;
    // 7 days of 15 s reports: 2 control planes and the engine nodes.
    await sql`
      insert into system_health (service_name, node_id, status, cpu_usage, memory_rss_bytes, heap_used_bytes, active_connections, active_calls, request_count, error_count, avg_response_ms, uptime_seconds, recorded_at)
      select case when k < 2 then 'control-plane' else 'media-engine' end, 'node-' || k, 'healthy', random() * 100, 200000000, 90000000, 10, 5, i * 100, i, 3.5, i * 15,
        now() - (i * interval '15 seconds')
      from generate_series(0, ${o.nodes + 1}) k cross join generate_series(0, 7 * 24 * 240 - 1) i`;
    const seedMs = performance.now() - s0;
    const v0 = performance.now();
    for (const t of ['conversations', 'messages', 'tool_calls', 'system_health']) await sql.unsafe(`vacuum analyze ${t}`);
    const vacuumMs = performance.now() - v0;
    const [counts] = await sql<{ m: number; t: number; h: number }[]>`
      select (select count(*)::int from messages) as m, (select count(*)::int from tool_calls) as t, (select count(*)::int from system_health) as h`;
    log(`[system] seeded ${num(counts.m)} messages, ${num(counts.t)} tool calls, ${num(counts.h)} health rows in ${num(seedMs / 1000, 1)} s; vacuum ${num(vacuumMs / 1000, 1)} s`);

    const [{ session_id: session }] = await sql<{ session_id: string }[]>`select session_id from conversations where agent_id = ${hot} order by started_at desc limit 1`;
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
    const r30 = `from=${day(29)}&to=${day(0)}`;
    const r92 = `from=${day(91)}&to=${day(0)}`;
    const scenarios: Array<[string, string, string, string]> = [
      ['latency', 'workspace, 30 d', r30, user.token],
      ['latency', 'workspace, 92 d', r92, user.token],
      ['latency', 'hot agent, 30 d', `agent_id=${hot}&${r30}`, user.token],
      ['latency', 'typical agent, 92 d', `agent_id=${typical}&${r92}`, user.token],
      ['latency', 'one session', `session_id=${session}`, user.token],
      ['usage', 'workspace, 30 d', r30, user.token],
      ['usage', 'workspace, 92 d', r92, user.token],
      ['usage', 'one user, 92 d', `user_id=user-7&${r92}`, user.token],
      ['tool-calls', 'workspace, 30 d', r30, user.token],
      ['tool-calls', 'workspace, 92 d', r92, user.token],
      ['tool-calls', 'one session', `session_id=${session}`, user.token],
      ['system-health', `${o.nodes + 2} processes, 7 d history`, '', ORG_KEY],
    ];
    const rows: SystemRow[] = [];
    for (const [route, scope, query, token] of scenarios) {
      const path = `/api/v1/analytics/${route}${query ? `?${query}` : ''}`;
      let n = 0;
      const once = async (): Promise<number> => {
        const t0 = performance.now();
        const res = await api(cp, 'GET', path, { token });
        const ms = performance.now() - t0;
        if (res.status !== 200) throw new Error(`${route}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        n = (res.body.data as unknown[]).length;
        return ms;
      };
      for (let i = 0; i < 3; i++) await once();
      const samples: number[] = [];
      for (let i = 0; i < o.runs; i++) samples.push(await once());
      rows.push({ route, scope, rows: n, p50: quantile(samples, 0.5), p95: quantile(samples, 0.95), max: Math.max(...samples) });
      log(`[system] ${route} ${scope}: p95 ${num(rows[rows.length - 1].p95, 1)} ms`);
    }

    // The heaviest latency case (workspace, 92 days) as the server runs it (same settings).
    const planRows = (await sql.begin(async (tx) => {
      await tx.unsafe(`set local work_mem = '64MB'`);
      await tx.unsafe(`set local jit = off`);
      return tx.unsafe(
        // Mirrors store.latency (messages part), parameters inlined as $1..$3.
        `explain (analyze, buffers, costs off, timing off)
         with conv as (select c.id from conversations c where c.workspace_id = any($1::uuid[]) and c.started_at >= $2 and c.started_at < $3)
         select m.asr_provider, m.asr_model, m.llm_provider, m.llm_model, m.tts_provider,
           count(m.asr_latency_ms) filter (where m.role = 'user'), sum(m.asr_latency_ms) filter (where m.role = 'user'),
           count(m.llm_latency_ms), sum(m.llm_latency_ms), count(m.tts_latency_ms), sum(m.tts_latency_ms),
           count(nullif(m.total_latency_ms, 0)), sum(nullif(m.total_latency_ms, 0)), count(m.internal_overhead_ms), sum(m.internal_overhead_ms)
         from conv join messages m on m.conversation_id = conv.id
         group by 1, 2, 3, 4, 5`,
        [[user.workspaceId] as never, day(91), new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)],
      );
    })) as unknown as Array<Record<string, string>>;
    const plan = planRows.map((r) => r['QUERY PLAN']).join('\n');

    const verdict = (p95: number) => (p95 < GOAL_P95_MS ? 'met' : 'NOT met');
    const section: Section = {
      title: 'System analytics: latency, usage, tool-calls, system-health over a year of seeded records (REST, authenticated)',
      settings: {
        conversations: num(o.conversations),
        messages: num(counts.m),
        'tool calls': num(counts.t),
        'health rows': num(counts.h),
        users: o.users,
        'hot agent share': o.hotShare,
        'days of data': o.days,
        'runs per row': `${o.runs} (after 3 warm-up)`,
        'seed s': num(seedMs / 1000, 1),
        'vacuum analyze s': num(vacuumMs / 1000, 1),
      },
      blocks: [
        table(
          ['route', 'scope', 'result rows', 'p50 ms', 'p95 ms', 'max ms', `goal p95 < ${GOAL_P95_MS} ms`],
          rows.map((r) => [r.route, r.scope, r.rows, num(r.p50, 1), num(r.p95, 1), num(r.max, 1), verdict(r.p95)]),
          2,
        ),
        `Plan (latency, workspace, 92 days):\n${plan}`,
      ],
      notes: ['Client-side latency: HTTP request to parsed JSON body, one request at a time, control plane and Postgres on the same machine.'],
    };
    return { section, rows, plan };
  } finally {
    await cp.close();
    await infra.close();
  }
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values: args } = benchArgs({
    options: {
      conversations: { type: 'string', default: String(SYSTEM_DEFAULTS.conversations) },
      users: { type: 'string', default: String(SYSTEM_DEFAULTS.users) },
      'hot-share': { type: 'string', default: String(SYSTEM_DEFAULTS.hotShare) },
      days: { type: 'string', default: String(SYSTEM_DEFAULTS.days) },
      nodes: { type: 'string', default: String(SYSTEM_DEFAULTS.nodes) },
      runs: { type: 'string', default: String(SYSTEM_DEFAULTS.runs) },
      'no-append': { type: 'boolean', default: false },
    },
  });
  const o: SystemBenchOptions = { conversations: Number(args.conversations), users: Number(args.users), hotShare: Number(args['hot-share']), days: Number(args.days), nodes: Number(args.nodes), runs: Number(args.runs) };
  if (!(o.conversations > 0) || !(o.users >= 1) || !(o.hotShare >= 0 && o.hotShare < 1) || !(o.days >= 1) || !(o.nodes >= 0) || !(o.runs >= 1)) throw new Error('bad options');
  const r = await runSystemAnalyticsBench(o);
  console.log(renderSection(r.section));
  if (!args['no-append']) appendResults('system analytics', [r.section], { command: commandLine() });
}
