/**
 * `GET /conversations/analysis/insights?agent_id=`: aggregates over an agent's complete results,
 * computed in SQL (three grouped queries per agent, not per field): value counts over every field
 * (`jsonb_each`), number statistics (`avg`, `percentile_cont`) and array element counts. The
 * current definition of each schema decides which fields are shown and how: a field removed from
 * a schema disappears from its insights, its stored values stay.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AnalysisInsightsSchema, FieldInsightSchema } from '../../shared/gen/voiceplane/v1/analysis_pb.js';
import type { Sql } from '../../shared/db/client.js';
import type { SchemaRow } from './store.js';

/** Values listed for string and string[] fields (the most frequent first). */
export const TOP_STRINGS = 10;

type Insights = MessageInitShape<typeof AnalysisInsightsSchema>;
type FieldInsight = MessageInitShape<typeof FieldInsightSchema>;

interface CountRow {
  schema_id: string;
  key: string;
  value: string;
  n: number;
}

export async function agentInsights(sql: Sql, agentId: string, schemas: SchemaRow[]): Promise<Insights> {
  const [cover] = await sql<{ calls: number; first: Date | null; last: Date | null }[]>`
    select count(*)::int as calls, min(c.started_at) as first, max(c.started_at) as last
    from conversations c
    where c.id in (select conversation_id from analysis_results where agent_id = ${agentId} and status = 'complete')`;
  const perSchema = await sql<{ schema_id: string; status: string; n: number }[]>`
    select schema_id, status, count(*)::int as n from analysis_results where agent_id = ${agentId} group by schema_id, status`;
  // Scalars (string, boolean, number) by their JSON text; nulls are "not answered" and left out.
  const scalars = await sql<CountRow[]>`
    select r.schema_id, e.key, e.value #>> '{}' as value, count(*)::int as n
    from analysis_results r, jsonb_each(r."values") e
    where r.agent_id = ${agentId} and r.status = 'complete' and jsonb_typeof(e.value) in ('string', 'boolean', 'number')
    group by r.schema_id, e.key, e.value #>> '{}'`;
  const elements = await sql<CountRow[]>`
    select r.schema_id, e.key, x.value, count(*)::int as n
    from analysis_results r, jsonb_each(r."values") e, jsonb_array_elements_text(e.value) x
    where r.agent_id = ${agentId} and r.status = 'complete' and jsonb_typeof(e.value) = 'array'
    group by r.schema_id, e.key, x.value`;
  const answeredArrays = await sql<{ schema_id: string; key: string; n: number }[]>`
    select r.schema_id, e.key, count(*)::int as n
    from analysis_results r, jsonb_each(r."values") e
    where r.agent_id = ${agentId} and r.status = 'complete' and jsonb_typeof(e.value) = 'array'
    group by r.schema_id, e.key`;
  const numbers = await sql<{ schema_id: string; key: string; mean: number; p50: number; p95: number }[]>`
    select r.schema_id, e.key, round(avg((e.value)::text::float8)::numeric, 2)::float8 as mean,
      round((percentile_cont(0.5) within group (order by (e.value)::text::float8))::numeric, 2)::float8 as p50,
      round((percentile_cont(0.95) within group (order by (e.value)::text::float8))::numeric, 2)::float8 as p95
    from analysis_results r, jsonb_each(r."values") e
    where r.agent_id = ${agentId} and r.status = 'complete' and jsonb_typeof(e.value) = 'number'
    group by r.schema_id, e.key`;

  const of = <T extends { schema_id: string; key: string }>(rows: T[], schemaId: string, key: string) => rows.filter((r) => r.schema_id === schemaId && r.key === key);
  const byCount = (a: CountRow, b: CountRow) => b.n - a.n || a.value.localeCompare(b.value);
  const counted = (rows: CountRow[]) => rows.sort(byCount).map((r) => ({ value: r.value, count: r.n }));
  return {
    agentId,
    callsCovered: cover?.calls ?? 0,
    periodStart: cover?.first?.toISOString(),
    periodEnd: cover?.last?.toISOString(),
    schemas: schemas.map((s) => ({
      schemaId: s.id,
      name: s.name,
      isActive: s.is_active,
      callsCovered: perSchema.find((r) => r.schema_id === s.id && r.status === 'complete')?.n ?? 0,
      failed: perSchema.find((r) => r.schema_id === s.id && r.status === 'failed')?.n ?? 0,
      fields: s.fields.map((f): FieldInsight => {
        if (f.type === 'string[]') {
          const rows = of(elements, s.id, f.name);
          return { name: f.name, type: f.type, answered: of(answeredArrays, s.id, f.name)[0]?.n ?? 0, values: counted(rows).slice(0, TOP_STRINGS) };
        }
        const rows = of(scalars, s.id, f.name);
        const answered = rows.reduce((n, r) => n + r.n, 0);
        if (f.type === 'number') {
          const st = of(numbers, s.id, f.name)[0];
          return { name: f.name, type: f.type, answered, values: [], mean: st?.mean ?? undefined, p50: st?.p50 ?? undefined, p95: st?.p95 ?? undefined };
        }
        const values = counted(rows);
        return { name: f.name, type: f.type, answered, values: f.type === 'string' ? values.slice(0, TOP_STRINGS) : values };
      }),
    })),
  };
}
