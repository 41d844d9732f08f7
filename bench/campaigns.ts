/**
 * Campaigns (issue 15): CSV import time of a 10,000-contact file, and dial scheduling precision at
 * 600 calls/min against the carrier simulator (real Postgres, Redis, control plane, engine node;
 * all in this process).
 *
 *   npm run build:bench && node dist-bench/bench/campaigns.js [--contacts 10000] [--dial-contacts 600] [--pacing 600] [--slice-ms 20000] [--no-append]
 *
 * Dialing: the first `--dial-contacts` of the imported campaign are dialed (the whole 10,000 at
 * 600/min takes 17 minutes by design; pass `--dial-contacts 10000` for it). Callees ring out
 * (no-answer after 300 ms), max_retries 0, max_concurrent_calls 50: pacing is the only limit.
 * Planned start of the i-th dial = first start + i x 60 s / pacing; lateness = actual - planned
 * (`dialed_at`, the claim's time). CPU: this process (control plane + engine + carrier simulator
 * share it) during the dial window, as % of one core.
 */
import { benchArgs } from './lib/args.js';
import { startTelephonyHarness } from '../test/carrier-sim/harness.js';
import { uploadCsv } from '../test/helpers/campaigns.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { summarize } from './lib/stats.js';

const { values: args } = benchArgs({
  options: {
    contacts: { type: 'string', default: '10000' },
    'dial-contacts': { type: 'string', default: '600' },
    pacing: { type: 'string', default: '600' },
    // The dialer's slice (default 20 000 ms): each hand-over between slices is a short pause.
    'slice-ms': { type: 'string', default: '20000' },
    'no-append': { type: 'boolean', default: false },
  },
});
const contacts = Number(args.contacts);
const dialContacts = Math.min(contacts, Number(args['dial-contacts']));
const pacing = Number(args.pacing);
const sliceMs = Number(args['slice-ms']);

const h = await startTelephonyHarness({ app: { jobs: { pollingIntervalSeconds: 0.5 }, campaigns: { dialer: { busyPollMs: 20, sliceMs } } } });
try {
  const agentId = await h.createAgent({ number: '+14155550601', direction: 'outbound' });
  const number = (i: number) => `+1415${String(2000000 + i).padStart(7, '0')}`;
  for (let i = 0; i < dialContacts; i++) h.callees.set(number(i), { outcome: 'no-answer', ringMs: 300 });
  const csv = `phone,name,note\n${Array.from({ length: contacts }, (_, i) => `${number(i)},Contact ${i},"row ${i}, imported"`).join('\n')}\n`;
  const res = await h.call('POST', '/campaigns', { name: 'bench', agent_id: agentId, pacing_per_minute: pacing, max_concurrent_calls: 50, max_retries: 0 });
  const id = res.body.data.id as string;

  const t0 = performance.now();
  const up = await uploadCsv(h.app.port, h.user.token, id, csv);
  const importMs = performance.now() - t0;
  if (up.status !== 200 || up.body.data.valid !== contacts) throw new Error(`import: ${up.status} ${JSON.stringify(up.body).slice(0, 300)}`);
  // Only the first `dialContacts` are dialed: cancel the rest up front.
  await h.infra.sql`update campaign_contacts set status = 'cancelled' where campaign_id = ${id} and seq > (
    select min(seq) + ${dialContacts - 1} from campaign_contacts where campaign_id = ${id})`;

  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  await h.call('POST', `/campaigns/${id}/start`);
  for (;;) {
    const [{ n }] = await h.infra.sql<{ n: number }[]>`select count(*)::int as n from campaign_contacts where campaign_id = ${id} and dialed_at is not null`;
    if (n >= dialContacts) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const windowMs = performance.now() - w0;
  const cpu = process.cpuUsage(cpu0);
  const starts = (await h.infra.sql<{ t: Date }[]>`select dialed_at as t from campaign_contacts where campaign_id = ${id} and dialed_at is not null order by dialed_at`).map((r) => r.t.getTime());
  const intervalMs = 60_000 / pacing;
  const lateness = starts.map((t, i) => t - (starts[0] + i * intervalMs));
  const gaps = starts.slice(1).map((t, i) => t - starts[i]);
  const late = summarize(lateness);
  const gap = summarize(gaps);
  const stalls = gaps.filter((g) => g > 2 * intervalMs).length;
  const spanS = (starts[starts.length - 1] - starts[0]) / 1000;
  await h.call('POST', `/campaigns/${id}/cancel`);

  const section: Section = {
    title: 'Campaigns: CSV import and dial scheduling precision',
    settings: { contacts, 'dial contacts': dialContacts, 'pacing per minute': pacing, 'max concurrent': 50, 'dialer slice ms': sliceMs, callee: 'no-answer after 300 ms' },
    blocks: [
      table(['import', 'rows', 'ms', 'rows/s', 'bytes'], [['10k CSV upload (multipart, streamed)', contacts, num(importMs), num((contacts / importMs) * 1000), num(Buffer.byteLength(csv))]]),
      table(
        ['dialing', 'n', 'p50 ms', 'p99 ms', 'max ms'],
        [
          ['lateness vs plan (actual - planned start)', late.count, num(late.p50, 1), num(late.p99, 1), num(late.max, 1)],
          [`gap between starts (plan ${num(intervalMs)} ms)`, gap.count, num(gap.p50, 1), num(gap.p99, 1), num(gap.max, 1)],
        ],
      ),
      table(['stalls', 'gaps over 2 x plan'], [['count', stalls]]),
      table(['rate', 'starts', 'span s', 'calls/min', 'CPU % of one core'], [['achieved', starts.length, num(spanS, 1), num((starts.length - 1) / (spanS / 60), 1), num(((cpu.user + cpu.system) / 1000 / windowMs) * 100, 1)]]),
    ],
    notes: ['CPU is this whole process (control plane, engine node, carrier simulator) during the dial window.'],
  };
  console.log(renderSection(section));
  if (!args['no-append']) appendResults('campaigns', [section], { command: commandLine() });
} finally {
  await h.close();
}
