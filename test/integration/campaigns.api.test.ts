/**
 * Campaign routes (spec doc 2, "Campaigns", rules 1 and 3-7, errors): create defaults (201) and
 * validation naming the field, list paging (limit/offset, meta, 400 out of range), 403 for another owner's agent or workspace, 404 for another
 * owner's campaign, PATCH merge semantics, start pre-flight (an agent that cannot dial out),
 * pause/cancel, the CSV upload's edge cases (BOM, quoted commas, CRLF, empty lines, non-UTF-8, no
 * phone column, 10 MB + 1 byte, extensions), the calls list, the streamed export (formulas
 * neutralised) and deleting the agent of campaigns. Real Postgres and Redis; agents made over REST.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import type { TestUser } from '../helpers/accounts.js';
import { parse as parseCsv } from 'csv-parse/sync';
import { exportCsv, until, uploadCsv, uploadTwoFiles } from '../helpers/campaigns.js';
import { MAX_CAMPAIGN_VARIABLES, MAX_CSV_COLUMNS } from '../../control-plane/campaigns/csv-import.js';
import { completeIfDone } from '../../control-plane/campaigns/dial-store.js';
import { lockCampaignUploads } from '../../control-plane/campaigns/store.js';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { CampaignService } from '../../shared/gen/voiceplane/v1/campaigns_pb.js';

let h: TelephonyHarness;
let agentId = '';
let bareAgentId = '';
let other: TestUser;
let otherAgentId = '';

beforeAll(async () => {
  h = await startTelephonyHarness();
  agentId = await h.createAgent({ number: '+14155550901', direction: 'outbound' });
  bareAgentId = await h.createAgent({ direction: 'outbound' });
  other = await h.newUser();
  otherAgentId = await h.createAgent({ number: '+14155550902', owner: other });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

async function create(body: Record<string, unknown> = {}, token?: string) {
  return h.call('POST', '/campaigns', { name: 'Spring promo', agent_id: agentId, ...body }, token);
}

async function created(body: Record<string, unknown> = {}): Promise<string> {
  const res = await create(body);
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

const upload = (id: string, csv: string | Buffer, token = h.user.token) => uploadCsv(h.app.port, token, id, csv);

describe('create, get, list', () => {
  it('a create with a client-chosen id is idempotent: same body -> the same campaign, other body or another tenant -> one 409', async () => {
    const id = '0190a0a0-2222-7000-8000-00000000ca11';
    const [a, b] = await Promise.all([create({ id, pacing_per_minute: 30 }), create({ id, pacing_per_minute: 30 })]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.data.id).toBe(id);
    expect(b.body.data).toEqual(a.body.data);
    const changed = await create({ id, pacing_per_minute: 31 });
    expect(changed.status).toBe(409);
    const foreign = await h.call('POST', '/campaigns', { id, name: 'Spring promo', agent_id: otherAgentId, pacing_per_minute: 30 }, other.token);
    expect(foreign.status).toBe(409);
    expect(foreign.body.error.message).toBe(changed.body.error.message);
    expect((await create({ id: 'nope' })).status).toBe(400);
  });

  it('creates a draft with the spec defaults; every create field but name and agent_id reads back under config', async () => {
    const res = await create();
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({
      name: 'Spring promo',
      agent_id: agentId,
      user_id: h.user.userId,
      status: 'draft',
      total_calls: 0,
      completed_calls: 0,
      failed_calls: 0,
      answered_calls: 0,
      column_map: {},
      started_at: null,
      completed_at: null,
      config: { pacing_per_minute: 10, max_concurrent_calls: 8, max_retries: 2, from_number: '', schedule_start: null, calling_hours_start: null, calling_hours_end: null, timezone: null },
    });
    const got = await h.call('GET', `/campaigns/${res.body.data.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ ...res.body.data, updated_at: got.body.data.updated_at });
  });

  it.each([
    [{ name: '' }, 'name'],
    [{ agent_id: '' }, 'agent_id'],
    [{ max_concurrent_calls: 0 }, 'max_concurrent_calls'],
    [{ pacing_per_minute: 0 }, 'pacing_per_minute'],
    [{ from_number: '555' }, 'from_number'],
    [{ schedule_start: 'tomorrow' }, 'schedule_start'],
    // Impossible dates were rolled over by Date.parse and stored (02-30 as 03-02).
    [{ schedule_start: '2030-02-30T10:00:00Z' }, 'schedule_start'],
    [{ schedule_start: '2029-02-29T10:00:00Z' }, 'schedule_start'],
    [{ schedule_start: '2030-04-31T10:00:00Z' }, 'schedule_start'],
    [{ schedule_start: '2030-01-01T24:00:00Z' }, 'schedule_start'],
    [{ calling_hours_start: '09:00', timezone: 'UTC' }, 'calling_hours_end'],
    [{ calling_hours_end: '17:00', timezone: 'UTC' }, 'calling_hours_start'],
    [{ calling_hours_start: '9am', calling_hours_end: '17:00', timezone: 'UTC' }, 'calling_hours_start'],
    [{ calling_hours_start: '09:00', calling_hours_end: '09:00', timezone: 'UTC' }, 'calling_hours_end'],
    [{ calling_hours_start: '09:00', calling_hours_end: '17:00' }, 'timezone'],
    [{ calling_hours_start: '09:00', calling_hours_end: '17:00', timezone: 'Atlantis/Deep' }, 'timezone'],
  ])('400 for %j naming %s', async (body, field) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(res.body.error.message).toContain(field);
  });

  it('accepts a window crossing midnight', async () => {
    const res = await create({ calling_hours_start: '21:00', calling_hours_end: '08:00', timezone: 'America/New_York' });
    expect(res.status).toBe(201);
    expect(res.body.data.config).toMatchObject({ calling_hours_start: '21:00', calling_hours_end: '08:00', timezone: 'America/New_York' });
  });

  it("403 for another owner's agent (and an unknown one) or workspace; 404 for another owner's campaign", async () => {
    expect((await create({ agent_id: otherAgentId })).status).toBe(403);
    expect((await create({ agent_id: '0190a0a0-0000-7000-8000-000000000000' })).status).toBe(403);
    expect((await h.call('GET', `/campaigns?workspace_id=${other.workspaceId}`)).status).toBe(403);
    const theirs = await create({ agent_id: otherAgentId }, other.token);
    expect(theirs.status).toBe(201);
    const id = theirs.body.data.id;
    for (const [method, path] of [['GET', ''], ['PATCH', ''], ['POST', '/start'], ['POST', '/pause'], ['POST', '/cancel'], ['GET', '/calls']] as const) {
      const res = await h.call(method, `/campaigns/${id}${path}`, method === 'PATCH' ? { max_retries: 1 } : undefined);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await upload(id, 'phone\n+14155550100\n')).status).toBe(404);
    expect((await exportCsv(h.app.port, h.user.token, id)).status).toBe(404);
    expect((await h.call('GET', '/campaigns/not-a-uuid')).status).toBe(404);
    const mine = await h.call('GET', '/campaigns');
    expect(mine.body.data.some((c: { id: string }) => c.id === id)).toBe(false);
    const scoped = await h.call('GET', `/campaigns?workspace_id=${h.user.workspaceId}`);
    expect(scoped.status).toBe(200);
    expect(scoped.body.data.length).toBeGreaterThan(0);
  });
});

describe('list paging (limit + offset in, meta out)', () => {
  let u: TestUser;
  let ids: string[] = [];
  const list = (query: string, token = u.token) => h.call('GET', `/campaigns${query}`, undefined, token);

  beforeAll(async () => {
    u = await h.newUser();
    const agent = await h.createAgent({ number: '+14155550903', owner: u });
    for (let i = 0; i < 5; i++) {
      const res = await create({ name: `paged ${i}`, agent_id: agent }, u.token);
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
    }
    ids = ids.reverse(); // newest first
  }, 60_000);

  it('defaults to 20 per page and says so in meta; the items keep their REST shape', async () => {
    const res = await list('');
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.meta).toEqual({ page: 1, per_page: 20, total: 5, total_pages: 1 });
    expect(res.body.data.map((c: { id: string }) => c.id)).toEqual(ids);
    const one = await h.call('GET', `/campaigns/${ids[0]}`, undefined, u.token);
    expect(res.body.data[0]).toEqual(one.body.data);
    expect(res.body.data[0]).toMatchObject({ started_at: null, config: { schedule_start: null, timezone: null } });
  });

  it('limit and offset page through the list in a stable order', async () => {
    const first = await list('?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.body.meta).toEqual({ page: 1, per_page: 2, total: 5, total_pages: 3 });
    const second = await list('?limit=2&offset=2');
    expect(second.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(2, 4));
    expect(second.body.meta).toEqual({ page: 2, per_page: 2, total: 5, total_pages: 3 });
    const third = await list('?limit=2&offset=4');
    expect(third.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(4));
    const past = await list('?limit=2&offset=10');
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ data: [], meta: { page: 6, per_page: 2, total: 5, total_pages: 3 } });
    expect((await list('?limit=200')).body.meta).toEqual({ page: 1, per_page: 200, total: 5, total_pages: 1 });
    const scoped = await list(`?workspace_id=${u.workspaceId}&limit=1&offset=1`);
    expect(scoped.body.data.map((c: { id: string }) => c.id)).toEqual([ids[1]]);
    expect(scoped.body.meta).toEqual({ page: 2, per_page: 1, total: 5, total_pages: 5 });
  });

  it.each([
    ['?limit=0', 'limit'],
    ['?limit=201', 'limit'],
    ['?limit=-1', 'limit'],
    ['?limit=abc', 'limit'],
    ['?limit=2.5', 'limit'],
    ['?offset=-1', 'offset'],
    ['?offset=x', 'offset'],
  ])('400 for %s naming %s', async (query, field) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(res.body.error.message).toContain(field);
  });

  it('401 without credentials whatever the query; 403 for a foreign workspace', async () => {
    expect((await list('?limit=0', '')).status).toBe(401);
    expect((await list(`?workspace_id=${other.workspaceId}&limit=1`)).status).toBe(403);
  });
});

describe('PATCH', () => {
  it('merges only the keys sent, ignores nulls and unknown keys, and validates the merged window', async () => {
    const id = await created({ max_retries: 3, calling_hours_start: '09:00', calling_hours_end: '17:00', timezone: 'Europe/Paris' });
    const res = await h.call('PATCH', `/campaigns/${id}`, { pacing_per_minute: 30, timezone: null, name: 'ignored', bogus: true });
    expect(res.status).toBe(200);
    expect(res.body.data.name).toBe('Spring promo');
    expect(res.body.data.config).toMatchObject({ pacing_per_minute: 30, max_retries: 3, max_concurrent_calls: 8, calling_hours_start: '09:00', calling_hours_end: '17:00', timezone: 'Europe/Paris' });
    // One end sent: judged together with the stored other end.
    expect((await h.call('PATCH', `/campaigns/${id}`, { calling_hours_end: '08:00' })).body.data.config.calling_hours_end).toBe('08:00');
    const bad = await h.call('PATCH', `/campaigns/${id}`, { calling_hours_end: '09:00' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('calling_hours_end');
    const tz = await h.call('PATCH', `/campaigns/${id}`, { timezone: 'Not/AZone' });
    expect(tz.status).toBe(400);
    expect(tz.body.error.message).toContain('timezone');
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.config).toMatchObject({ calling_hours_end: '08:00', timezone: 'Europe/Paris' });
  });
});

describe('CSV upload, calls list, export', () => {
  it('over gRPC the upload summary names the phone column too (it was dropped: snake_case summary, camelCase message)', async () => {
    const id = await created();
    const client = createClient(CampaignService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${h.app.port}` }));
    const res = await client.uploadCampaignCsv({ campaignId: id, csv: new TextEncoder().encode('Name,Phone\nAnn,+14155550111\n') }, { headers: { authorization: `Bearer ${h.user.token}` } });
    expect({ total: res.total, valid: res.valid, invalid: res.invalid, phoneColumn: res.phoneColumn, headers: res.headers }).toEqual({ total: 1, valid: 1, invalid: 0, phoneColumn: 'Phone', headers: ['Name', 'Phone'] });
    expect(res.preview).toEqual([{ Phone: '+14155550111', Name: 'Ann' }]);
  });

  it('parses BOM, CRLF, quoted commas and empty lines; normalises numbers; appends on a second upload', async () => {
    const id = await created();
    const csv = '\uFEFFName,Mobile Number,Note\r\n"Smith, Ann",+1 (415) 555-0101,"said ""hi"""\r\n\r\nBob,1.415.555.0102,\r\nEve,12,bad\r\n,,\r\n';
    const res = await upload(id, csv);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      total: 3,
      valid: 2,
      invalid: 1,
      duplicates: 0,
      phone_column: 'Mobile Number',
      headers: ['Name', 'Mobile Number', 'Note'],
      preview: [
        { 'Mobile Number': '+14155550101', Name: 'Smith, Ann', Note: 'said "hi"' },
        { 'Mobile Number': '+14155550102', Name: 'Bob', Note: '' },
      ],
    });
    // A number the campaign has (from this upload or an earlier one, in any spelling) is not added again.
    const second = await upload(id, 'phone,city\n+442071838750,London\n(+1) 415-555-0101,again\n+44 20 7183 8750,twice\n');
    expect(second.body.data).toMatchObject({ total: 3, valid: 3, duplicates: 2, phone_column: 'phone' });
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.total_calls).toBe(3);

    const calls = await h.call('GET', `/campaigns/${id}/calls?per_page=2`);
    expect(calls.status).toBe(200);
    expect(calls.body.data).toMatchObject({ total: 3, page: 1, per_page: 2 });
    expect(calls.body.data.calls.map((c: { to_number: string }) => c.to_number)).toEqual(['+14155550101', '+14155550102']);
    expect(calls.body.data.calls[0]).toMatchObject({ status: 'queued', attempts: 0, dynamic_variables: { Name: 'Smith, Ann', Note: 'said "hi"' }, call_id: null, duration_seconds: null });
    const page2 = await h.call('GET', `/campaigns/${id}/calls?page=2&per_page=2`);
    expect(page2.body.data.calls.map((c: { to_number: string }) => c.to_number)).toEqual(['+442071838750']);
    expect((await h.call('GET', `/campaigns/${id}/calls?status=failed`)).body.data).toMatchObject({ total: 0, calls: [] });
    for (const q of ['page=0', 'per_page=0', 'per_page=201']) expect((await h.call('GET', `/campaigns/${id}/calls?${q}`)).status, q).toBe(400);

    const ex = await exportCsv(h.app.port, h.user.token, id);
    expect(ex.status).toBe(200);
    expect(ex.headers['content-type']).toContain('text/csv');
    expect(ex.headers['content-disposition']).toBe(`attachment; filename="campaign-${id}.csv"`);
    expect(ex.text.split('\r\n')).toEqual([
      'phone,Name,Note,city,status,attempts,duration_seconds,dialed_at,completed_at,error_message',
      '+14155550101,"Smith, Ann","said ""hi""",,queued,0,,,,',
      '+14155550102,Bob,,,queued,0,,,,',
      '+442071838750,,,London,queued,0,,,,',
      '',
    ]);
  });

  it('a number with an extension or other trailing text is counted invalid, not stored without it', async () => {
    const id = await created();
    const res = await upload(id, 'phone\n+14155552671 ext 12\n+14155552672x12\n+14155552674;x\n+1 (415) 555-2675\n');
    expect(res.body.data).toMatchObject({ total: 4, valid: 1, invalid: 3, duplicates: 0 });
    const calls = await h.call('GET', `/campaigns/${id}/calls`);
    expect(calls.body.data.calls.map((c: { to_number: string }) => c.to_number)).toEqual(['+14155552675']);
  });

  it('concurrent uploads to one campaign all land (they took turns; they deadlocked into 500s)', async () => {
    const id = await created();
    const file = (n: number) => `phone,batch\n${Array.from({ length: 300 }, (_, i) => `+1415555${String(n * 1000 + i).padStart(4, '0')},b${n}`).join('\n')}\n`;
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => upload(id, file(n))));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.total_calls).toBe(1500);
  });

  it('a long upload locks no campaign row: a PATCH and a cancel answer at once, and the cancel voids the upload', async () => {
    const id = await created();
    const rows = Array.from({ length: 120_000 }, (_, i) => `+1415${200 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')},n${i}`);
    const pending = upload(id, `phone,name\n${rows.join('\n')}\n`);
    let settled = false;
    void pending.then(() => (settled = true));
    // The import holds the campaign's upload lock (an advisory lock) from its first statement.
    const held = () => h.infra.sql`
      select 1 from pg_locks where locktype = 'advisory' and granted and objsubid = 1
        and ((classid::bigint << 32) | objid::bigint) = hashtextextended(${'campaign-upload:' + id}, 0)`;
    await until(async () => (await held()).length > 0, 20_000, 'upload under way');
    const patched = await h.call('PATCH', `/campaigns/${id}`, { name: 'renamed while importing' });
    expect(patched.status).toBe(200);
    const cancelled = await h.call('POST', `/campaigns/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    // Both answered while the import was still running (a row lock made them wait for it).
    expect(settled).toBe(false);
    const res = await pending;
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: 'status', problem: expect.stringContaining('became cancelled during the upload') }]);
    expect((await h.call('GET', `/campaigns/${id}`)).body.data).toMatchObject({ status: 'cancelled', total_calls: 0 });
  }, 60_000);

  it('a running campaign with no contact left does not complete while an upload is under way', async () => {
    const id = await created();
    await h.infra.sql`update campaigns set status = 'running', started_at = now() where id = ${id}`;
    // An upload in progress: its transaction holds the campaign's upload lock until it ends.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const upload = h.infra.sql.begin(async (tx) => {
      await lockCampaignUploads(tx, id);
      locked();
      await released;
    });
    await isLocked;
    expect(await completeIfDone(h.infra.sql, id, new Date())).toBe(false);
    release();
    await upload;
    expect(await completeIfDone(h.infra.sql, id, new Date())).toBe(true);
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.status).toBe('completed');
  });

  it('a value with a bare line break is quoted in the export, so the row survives a CSV reader', async () => {
    const id = await created();
    expect((await upload(id, 'phone,name,city\r\n+14155550111,"Quote, Inc","Lon\ndon"\r\n+14155550112,"Cr\rLf",Paris\r\n')).status).toBe(200);
    const ex = await exportCsv(h.app.port, h.user.token, id);
    expect(ex.text).toContain('"Lon\ndon"');
    expect(ex.text).toContain('"Cr\rLf"');
    const rows = parseCsv(ex.text, { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((r) => [r.phone, r.name, r.city])).toEqual([
      ['+14155550111', 'Quote, Inc', 'Lon\ndon'],
      ['+14155550112', 'Cr\rLf', 'Paris'],
    ]);
  });

  it('the export neutralises uploaded cells a spreadsheet would run as formulas (leading quote); our phone column keeps its +', async () => {
    const id = await created();
    const csv = 'phone,name,note,"=HYPERLINK(""http://evil.example"",""x"")",alt\r\n' +
      '+14155550131,=1+2,+44 20 7183 8750,a,-3\r\n' +
      '+14155550132,@SUM(A1),"\tTab",b,"\rCR"\r\n' +
      '+14155550133,plain,a=b,c,\r\n';
    expect((await upload(id, csv)).status).toBe(200);
    const ex = await exportCsv(h.app.port, h.user.token, id);
    const rows = parseCsv(ex.text) as string[][];
    expect(rows[0]).toEqual(['phone', 'name', 'note', `'=HYPERLINK("http://evil.example","x")`, 'alt', 'status', 'attempts', 'duration_seconds', 'dialed_at', 'completed_at', 'error_message']);
    expect(rows.slice(1).map((r) => r.slice(0, 6))).toEqual([
      ['+14155550131', "'=1+2", "'+44 20 7183 8750", 'a', "'-3", 'queued'],
      ['+14155550132', "'@SUM(A1)", "'\tTab", 'b', "'\rCR", 'queued'],
      ['+14155550133', 'plain', 'a=b', 'c', '', 'queued'],
    ]);
    // The stored values are the uploader's, unchanged: only the export is neutralised.
    const calls = await h.call('GET', `/campaigns/${id}/calls`);
    expect(calls.body.data.calls[0].dynamic_variables).toMatchObject({ name: '=1+2', note: '+44 20 7183 8750', alt: '-3' });
  });

  it('refuses columns of the same name and a second file part, adding nothing', async () => {
    const id = await created();
    const dup = await upload(id, 'phone,name,name\n+14155550113,a,b\n');
    expect(dup.status).toBe(400);
    expect(dup.body.error.details?.[0]?.field).toBe('file');
    expect(dup.body.error.message).toContain('"name"');
    const two = await uploadTwoFiles(h.app.port, h.user.token, id, 'phone\n+14155550114\n', 'phone\n+14155550115\n');
    expect(two.status).toBe(400);
    expect(two.body.error.message).toContain('one file per upload');
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.total_calls).toBe(0);
  });

  it('bounds the columns: 200 per file, 256 characters per header, 500 variable names per campaign; a header of a million commas is refused at once', async () => {
    const id = await created();
    const wide = await upload(id, `phone${','.repeat(1_000_000)}\n+14155550116\n`);
    expect(wide.status).toBe(400);
    expect(wide.body.error.message).toContain(`at most ${MAX_CSV_COLUMNS}`);
    const longName = await upload(id, `phone,${'n'.repeat(257)}\n+14155550117,x\n`);
    expect(longName.status).toBe(400);
    expect(longName.body.error.message).toContain('longer than 256 characters');
    // 199 new names per upload: the third upload would take the campaign past 500.
    const file = (k: number) => `phone,${Array.from({ length: 199 }, (_, i) => `v${k}_${i}`).join(',')}\n+1415555012${k},${Array(199).fill('x').join(',')}\n`;
    expect((await upload(id, file(0))).status).toBe(200);
    expect((await upload(id, file(1))).status).toBe(200);
    const third = await upload(id, file(2));
    expect(third.status).toBe(400);
    expect(third.body.error.message).toContain(`more than ${MAX_CAMPAIGN_VARIABLES} distinct variable names`);
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.total_calls).toBe(2);
  });

  it('an empty campaign exports only the header row', async () => {
    const id = await created();
    const ex = await exportCsv(h.app.port, h.user.token, id);
    expect(ex.text).toBe('phone,status,attempts,duration_seconds,dialed_at,completed_at,error_message\r\n');
  });

  it('a quote inside an unquoted field is text (5" screen, O"Brien), as spreadsheets write it', async () => {
    const id = await created();
    const res = await upload(id, 'phone,size,name\n+14155550902,5" screen,O"Brien\n');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const calls = await h.call('GET', `/campaigns/${id}/calls`);
    expect(calls.body.data.calls[0].dynamic_variables).toEqual({ size: '5" screen', name: 'O"Brien' });
  });

  it('refuses a file without a phone column, non-UTF-8 bytes, a missing field and 10 MB + 1 byte, adding nothing', async () => {
    const id = await created();
    const none = await upload(id, 'name,city\nAnn,Paris\n');
    expect(none.status).toBe(400);
    expect(none.body.error.message).toContain('phone column');
    const latin1 = await upload(id, Buffer.concat([Buffer.from('phone,name\n+14155550103,Ren'), Buffer.from([0xe9, 0x0a])]));
    expect(latin1.status).toBe(400);
    expect(latin1.body.error.message).toContain('UTF-8');
    const nul = await upload(id, 'phone,name\n+14155550106,Ann\u0000Lee\n');
    expect(nul.status).toBe(400);
    expect(nul.body.error.details?.[0]?.field).toBe('file');
    const unclosed = await upload(id, 'phone,name\n+14155550107,"Ann\n');
    expect(unclosed.status).toBe(400);
    expect(unclosed.body.error.message).toContain('not valid CSV');
    const wrongField = await uploadCsv(h.app.port, h.user.token, id, 'phone\n+14155550104\n', 'contacts');
    expect(wrongField.status).toBe(400);
    expect(wrongField.body.error.message).toContain('file');
    const line = '+14155550105,padding-padding-padding-padding\n';
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 'x');
    Buffer.from(`phone,pad\n${line.repeat(1000)}`).copy(big);
    big[big.length - 1] = 0x0a;
    const tooBig = await upload(id, big);
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.error.code).toBe('FILE_TOO_LARGE');
    expect((await h.call('GET', `/campaigns/${id}`)).body.data.total_calls).toBe(0);
  }, 30_000);
});

describe('start, pause, cancel', () => {
  it('pre-flight: no contacts, no caller ID, wrong status', async () => {
    const empty = await created();
    const r1 = await h.call('POST', `/campaigns/${empty}/start`);
    expect(r1.status).toBe(400);
    expect(r1.body.error.message).toContain('no contacts');

    const noCaller = await created({ agent_id: bareAgentId });
    await upload(noCaller, 'phone\n+14155550106\n');
    const r2 = await h.call('POST', `/campaigns/${noCaller}/start`);
    expect(r2.status).toBe(400);
    expect(r2.body.error.message).toContain('caller ID');

    expect((await h.call('POST', `/campaigns/${noCaller}/pause`)).status).toBe(400);
    expect((await h.call('POST', `/campaigns/${noCaller}/cancel`)).body.data.status).toBe('cancelled');
    const again = await h.call('POST', `/campaigns/${noCaller}/start`);
    expect(again.status).toBe(400);
    expect(again.body.error.message).toContain('cancelled');
    expect((await h.call('POST', `/campaigns/${noCaller}/cancel`)).status).toBe(400);
    const contacts = await h.call('GET', `/campaigns/${noCaller}/calls`);
    expect(contacts.body.data.calls[0]).toMatchObject({ status: 'cancelled' });
  });

  it('pre-flight: an agent that cannot dial out (call_direction inbound, no TTS provider, inactive) is refused naming why; nothing is spent', async () => {
    const inbound = await h.createAgent({ number: '+14155550911', direction: 'inbound' });
    const inactive = await h.createAgent({ number: '+14155550915', direction: 'outbound', inactive: true });
    const noTts = await h.createAgent({ number: '+14155550912', direction: 'outbound' });
    expect((await h.call('DELETE', `/agents/${noTts}/providers/tts`)).status).toBe(200);
    expect((await h.call('POST', `/agents/${noTts}/versions/publish`)).status).toBeLessThan(300);
    for (const [agent, says] of [
      [inbound, 'call_direction is inbound'],
      [noTts, 'no tts provider'],
      [inactive, 'is inactive'],
    ] as const) {
      const id = await created({ agent_id: agent });
      await upload(id, 'phone\n+14155550913\n+14155550914\n');
      const res = await h.call('POST', `/campaigns/${id}/start`);
      expect(res.status, says).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
      expect(res.body.error.details).toEqual([{ field: 'agent_id', problem: expect.stringContaining(says) }]);
      const after = await h.call('GET', `/campaigns/${id}`);
      expect(after.body.data).toMatchObject({ status: 'draft', started_at: null, completed_calls: 0, failed_calls: 0 });
      const calls = (await h.call('GET', `/campaigns/${id}/calls`)).body.data.calls;
      for (const c of calls) expect(c).toMatchObject({ status: 'queued', attempts: 0, dialed_at: null, error_message: null });
    }
    expect(h.sim.calls.size).toBe(0);
  });

  it('a future schedule_start waits in scheduled; pause and resume keep it there; cancel is terminal', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const id = await created({ schedule_start: at });
    await upload(id, 'phone\n+14155550107\n');
    const started = await h.call('POST', `/campaigns/${id}/start`);
    expect(started.status).toBe(200);
    expect(started.body.data).toMatchObject({ status: 'scheduled', started_at: null, config: { schedule_start: at } });
    // Start is allowed from scheduled (spec state table) and leaves it waiting.
    expect((await h.call('POST', `/campaigns/${id}/start`)).body.data.status).toBe('scheduled');
    expect((await h.call('POST', `/campaigns/${id}/pause`)).body.data.status).toBe('paused');
    expect((await h.call('POST', `/campaigns/${id}/start`)).body.data.status).toBe('scheduled');
    const cancelled = await h.call('POST', `/campaigns/${id}/cancel`);
    expect(cancelled.body.data.status).toBe('cancelled');
    expect(cancelled.body.data.completed_at).not.toBeNull();
    expect((await upload(id, 'phone\n+14155550108\n')).status).toBe(400);
    // Nothing was ever dialed.
    expect(h.sim.calls.size).toBe(0);
  });
});

describe('deleting the agent of campaigns', () => {
  it('is refused (409) while one of its campaigns is not finished; once all are finished it goes, and their history stays with agent_id null', async () => {
    const agent = await h.createAgent({ number: '+14155550921', direction: 'outbound' });
    const draft = await created({ agent_id: agent, name: 'draft one' });
    const scheduled = await created({ agent_id: agent, name: 'scheduled one', schedule_start: new Date(Date.now() + 3_600_000).toISOString() });
    const finished = await created({ agent_id: agent, name: 'finished one' });
    for (const id of [draft, scheduled, finished]) expect((await upload(id, 'phone,name\n+14155550922,Ann\n+14155550923,=cmd\n')).status).toBe(200);
    expect((await h.call('POST', `/campaigns/${scheduled}/start`)).body.data.status).toBe('scheduled');
    expect((await h.call('POST', `/campaigns/${finished}/cancel`)).body.data.status).toBe('cancelled');

    const refused = await h.call('DELETE', `/agents/${agent}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toContain('2 campaigns that are not finished');
    expect(refused.body.error.message).toContain(draft);
    expect(refused.body.error.message).toContain(scheduled);
    expect(refused.body.error.message).not.toContain(finished);
    expect((await h.call('GET', `/agents/${agent}`)).status).toBe(200);
    // Paused is not finished either.
    expect((await h.call('POST', `/campaigns/${scheduled}/pause`)).body.data.status).toBe('paused');
    expect((await h.call('POST', `/campaigns/${draft}/cancel`)).body.data.status).toBe('cancelled');
    const stillRefused = await h.call('DELETE', `/agents/${agent}`);
    expect(stillRefused.status).toBe(409);
    expect(stillRefused.body.error.message).toContain(`1 campaign that is not finished (draft, scheduled, running or paused): ${scheduled};`);

    expect((await h.call('POST', `/campaigns/${scheduled}/cancel`)).body.data.status).toBe('cancelled');
    expect((await h.call('DELETE', `/agents/${agent}`)).status).toBe(200);
    expect((await h.call('GET', `/agents/${agent}`)).status).toBe(404);
    // The finished campaigns and their contacts' results outlive the agent.
    for (const id of [draft, scheduled, finished]) {
      const got = await h.call('GET', `/campaigns/${id}`);
      expect(got.status).toBe(200);
      expect(got.body.data).toMatchObject({ id, agent_id: null, status: 'cancelled', total_calls: 2 });
      const calls = await h.call('GET', `/campaigns/${id}/calls`);
      expect(calls.body.data.calls.map((c: { to_number: string; status: string }) => [c.to_number, c.status])).toEqual([
        ['+14155550922', 'cancelled'],
        ['+14155550923', 'cancelled'],
      ]);
      const ex = await exportCsv(h.app.port, h.user.token, id);
      expect(ex.status).toBe(200);
      expect((parseCsv(ex.text) as string[][]).map((r) => [r[0], r[1], r[2], r[7]])).toEqual([
        ['phone', 'name', 'status', 'error_message'],
        ['+14155550922', 'Ann', 'cancelled', 'campaign cancelled'],
        ['+14155550923', "'=cmd", 'cancelled', 'campaign cancelled'],
      ]);
    }
    const listed = (await h.call('GET', '/campaigns?limit=200')).body.data as Array<{ id: string; agent_id: string | null }>;
    expect(listed.filter((c) => [draft, scheduled, finished].includes(c.id)).map((c) => c.agent_id)).toEqual([null, null, null]);
    // A final campaign stays final; a new one cannot name the deleted agent.
    expect((await h.call('POST', `/campaigns/${draft}/start`)).status).toBe(400);
    expect((await create({ agent_id: agent })).status).toBe(403);
    // Over gRPC the deleted agent's id is empty (proto3 strings have no null).
    const client = createClient(CampaignService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${h.app.port}` }));
    const viaGrpc = await client.getCampaign({ campaignId: finished }, { headers: { authorization: `Bearer ${h.user.token}` } });
    expect(viaGrpc.agentId).toBe('');
  });
});
