/**
 * Pipeline analytics (issue 16): `GET /conversations/analytics/pipeline-events` and
 * `.../pipeline-summary` over 1,000,000 seeded events, through the real control plane (HTTP,
 * bearer auth, fencing, REST envelope), against the goal "under 200 ms p95".
 *
 *   npm run build:bench && node dist-bench/bench/pipeline-analytics.js [--events 1000000] [--agents 20] [--hot-share 0.25] [--days 90] [--runs 50] [--no-append]
 *
 * Seeding (generate_series, in a throwaway schema dropped at the end): `events / 20` completed
 * conversations spread uniformly over `--days` days up to now, 5 turns of 4 events (asr, llm,
 * tts, tool) each, 2 providers/models per step, ~3% errors and ~5% interrupted LLM/TTS. One
 * "hot" agent owns `--hot-share` of the conversations (a large tenant's busiest agent), the rest
 * are split over `--agents - 1` agents ("typical"). Then VACUUM ANALYZE, as autovacuum would
 * after a bulk insert (index-only scans need the visibility map).
 *
 * Each scenario: 5 warm-up requests, then `--runs` sequential requests, client-side latency
 * (fetch to the response body). The plan of the heaviest query is printed (EXPLAIN ANALYZE).
 */
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { startControlPlane } from '../control-plane/app.js';
import { api, createTestUser } from '../test/helpers/accounts.js';
import { startTestInfra } from '../test/helpers/infra.js';
import { createAgent } from '../test/unit/records/control-plane.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { quantile } from './lib/stats.js';

export interface PipelineBenchOptions {
  events: number;
  agents: number;
  hotShare: number;
  days: number;
  runs: number;
}

export const PIPELINE_DEFAULTS: PipelineBenchOptions = { events: 1_000_000, agents: 20, hotShare: 0.25, days: 90, runs: 50 };
export const GOAL_P95_MS = 200;

export interface PipelineRow {
  route: string;
  agent: 'typical' | 'hot';
  rangeDays: number;
  rows: number;
  eventsInRange: number;
  p50: number;
  p95: number;
  max: number;
}

const EVENTS_PER_CONVERSATION = 20;

export async function runPipelineAnalyticsBench(o: PipelineBenchOptions, log: (l: string) => void = console.error): Promise<{ section: Section; rows: PipelineRow[]; plan: string }> {
  // Seeding and VACUUM of a million rows take longer than the 10 s production statement timeout.
  const infra = await startTestInfra({ dbStatementTimeoutMs: 600_000 }, { LOG_LEVEL: 'warn' });
  const cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  try {
    const user = await createTestUser(cp);
    const hot = await createAgent(cp as never, infra, user, user.workspaceId, 'hot agent');
    const typical = await createAgent(cp as never, infra, user, user.workspaceId, 'typical agent');
    const sql = infra.sql;
    const conversations = Math.ceil(o.events / EVENTS_PER_CONVERSATION);
    const hotPct = Math.round(o.hotShare * 1000);
    const others = o.agents - 1;

    log(`[pipeline] seeding ${num(conversations)} conversations, ${num(conversations * EVENTS_PER_CONVERSATION)} events`);
    const s0 = performance.now();
    // Agent k of the "others": k = 0 is the typical agent (a real agent row, so the route's
    // fencing passes); k >= 1 are ids without rows (records outlive agents anyway).
    await sql`
      insert into conversations (id, session_id, agent_id, workspace_id, status, total_turns, started_at, ended_at, created_at, updated_at)
      select gen_random_uuid(), 'bench-' || g,
        case when g % 1000 < ${hotPct} then ${hot}::uuid
             when (g / 1000) % ${others} = 0 then ${typical}::uuid
             else md5('agent' || ((g / 1000) % ${others}))::uuid end,
        ${user.workspaceId}::uuid, 'completed', 5, t, t + interval '2 minutes', t, t
      from (select g, now() - random() * ${o.days} * interval '1 day' as t from generate_series(1, ${conversations}) g) s`;
    await sql`
      insert into pipeline_events (id, conversation_id, agent_id, workspace_id, turn_number, event_type, status, provider, model_id, latency_ms, error_message, created_at)
      select gen_random_uuid(), z.id, z.agent_id, z.workspace_id, n, kind,
        case when r < 0.03 then 'error' when kind in ('llm', 'tts') and r < 0.08 then 'interrupted' else 'success' end,
        case kind when 'asr' then (array['deepgram', 'sim'])[1 + p] when 'llm' then (array['openai', 'groq'])[1 + p]
                    when 'tts' then (array['elevenlabs', 'cartesia'])[1 + p] else (array['lookup_order', 'book_slot'])[1 + p] end,
        case kind when 'asr' then (array['nova-2', 'sim-asr'])[1 + p] when 'llm' then (array['gpt-4o-mini', 'llama-3.1-8b'])[1 + p]
                    when 'tts' then (array['eleven_flash_v2_5', 'sonic-2'])[1 + p] else '' end,
        (base + r2 * spread + case when r3 < 0.05 then spread * 4 else 0 end)::int,
        case when r < 0.03 then 'seeded failure' end,
        z.started_at + n * interval '20 seconds'
      -- random() in the inner select list: drawn per event row (a lateral would be per conversation).
      from (
        select c.id, c.agent_id, c.workspace_id, c.started_at, n, e.kind, e.base, e.spread,
          random() as r, random() as r2, random() as r3, (random() < 0.3)::int as p
        from conversations c
          cross join generate_series(1, 5) n
          cross join (values ('asr', 80, 300), ('llm', 150, 700), ('tts', 60, 250), ('tool', 20, 400)) e(kind, base, spread)
        where c.session_id like 'bench-%'
      ) z`;
    const seedMs = performance.now() - s0;
    const v0 = performance.now();
    await sql`vacuum analyze conversations`;
    await sql`vacuum analyze pipeline_events`;
    const vacuumMs = performance.now() - v0;
    const [{ n: total }] = await sql<{ n: number }[]>`select count(*)::int as n from pipeline_events`;
    log(`[pipeline] seeded ${num(total)} events in ${num(seedMs / 1000, 1)} s, vacuum analyze ${num(vacuumMs / 1000, 1)} s`);

    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
    const rows: PipelineRow[] = [];
    for (const [agentKind, agentId] of [['typical', typical], ['hot', hot]] as const) {
      for (const rangeDays of [30, 92]) {
        const from = day(rangeDays - 1);
        const to = day(0);
        const [{ n: inRange }] = await sql<{ n: number }[]>`
          select count(*)::int as n from pipeline_events where agent_id = ${agentId} and created_at >= ${from}::date and created_at < ${to}::date + 1`;
        for (const route of ['pipeline-events', 'pipeline-summary']) {
          const path = `/api/v1/conversations/analytics/${route}?agent_id=${agentId}&from=${from}&to=${to}`;
          let groups = 0;
          const once = async (): Promise<number> => {
            const t0 = performance.now();
            const res = await api(cp, 'GET', path, { token: user.token });
            const ms = performance.now() - t0;
            if (res.status !== 200) throw new Error(`${route}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
            groups = (res.body.data as unknown[]).length;
            return ms;
          };
          for (let i = 0; i < 5; i++) await once();
          const samples: number[] = [];
          for (let i = 0; i < o.runs; i++) samples.push(await once());
          rows.push({ route, agent: agentKind, rangeDays, rows: groups, eventsInRange: inRange, p50: quantile(samples, 0.5), p95: quantile(samples, 0.95), max: Math.max(...samples) });
          log(`[pipeline] ${route} ${agentKind} ${rangeDays} d: p95 ${num(rows[rows.length - 1].p95, 1)} ms`);
        }
      }
    }

    // The plan of the heaviest case (hot agent, maximum range), as the server runs it (same work_mem).
    const planRows = (await sql.begin(async (tx) => {
      await tx.unsafe(`set local work_mem = '64MB'`);
      await tx.unsafe(`set local jit = off`);
      return tx.unsafe(
        `explain (analyze, buffers, costs off, timing off)
         select event_type, status, provider, model_id, count(*)::int, avg(latency_ms), percentile_cont(0.95) within group (order by latency_ms)
         from pipeline_events where agent_id = $1 and created_at >= $2 and created_at < $3
         group by event_type, status, provider, model_id order by 1, 2, 3, 4`,
        [hot, new Date(Date.now() - 91 * 86_400_000).toISOString().slice(0, 10), new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)],
      );
    })) as unknown as Array<Record<string, string>>;
    const plan = planRows.map((r) => r['QUERY PLAN']).join('\n');

    const verdict = (p95: number) => (p95 < GOAL_P95_MS ? 'met' : 'NOT met');
    const section: Section = {
      title: 'Pipeline analytics: pipeline-events and pipeline-summary over seeded events (REST, authenticated)',
      settings: {
        events: num(total),
        conversations: num(conversations),
        agents: o.agents,
        'hot agent share': o.hotShare,
        'days of data': o.days,
        'runs per row': `${o.runs} (after 5 warm-up)`,
        'seed s': num(seedMs / 1000, 1),
        'vacuum analyze s': num(vacuumMs / 1000, 1),
      },
      blocks: [
        table(
          ['route', 'agent', 'range days', 'events in range', 'result rows', 'p50 ms', 'p95 ms', 'max ms', `goal p95 < ${GOAL_P95_MS} ms`],
          rows.map((r) => [r.route, r.agent, r.rangeDays, num(r.eventsInRange), r.rows, num(r.p50, 1), num(r.p95, 1), num(r.max, 1), verdict(r.p95)]),
          2,
        ),
        `Plan (hot agent, 92 days, pipeline-events query):\n${plan}`,
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
      events: { type: 'string', default: String(PIPELINE_DEFAULTS.events) },
      agents: { type: 'string', default: String(PIPELINE_DEFAULTS.agents) },
      'hot-share': { type: 'string', default: String(PIPELINE_DEFAULTS.hotShare) },
      days: { type: 'string', default: String(PIPELINE_DEFAULTS.days) },
      runs: { type: 'string', default: String(PIPELINE_DEFAULTS.runs) },
      'no-append': { type: 'boolean', default: false },
    },
  });
  const o: PipelineBenchOptions = { events: Number(args.events), agents: Number(args.agents), hotShare: Number(args['hot-share']), days: Number(args.days), runs: Number(args.runs) };
  if (!(o.agents >= 2) || !(o.hotShare >= 0 && o.hotShare < 1) || !(o.events > 0) || !(o.days >= 1) || !(o.runs >= 1)) throw new Error('bad options: --agents >= 2, 0 <= --hot-share < 1, --events > 0, --days >= 1, --runs >= 1');
  const r = await runPipelineAnalyticsBench(o);
  console.log(renderSection(r.section));
  if (!args['no-append']) appendResults('pipeline analytics', [r.section], { command: commandLine() });
}
