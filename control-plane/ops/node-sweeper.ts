/**
 * The node sweeper (issue 23; docs/operations.md "Node loss" and "Crash repair"): an engine node
 * that dies (SIGKILL, OOM, a lost machine) never writes the end of its calls. This pass, on the
 * durable job queue (`ops.node-sweep`, one key for the deployment: one pass at a time across
 * control-plane replicas, correct after any of them crashes), finds them and finishes them:
 *
 * 1. list the live nodes (a draining node is live). A registry that does not answer judges
 *    nothing: the pass ends there;
 * 2. nodes that own active conversations (`conversations.engine_node_id`) but are not listed are
 *    remembered in `engine_node_watch` from the first listing that missed them; a listing that
 *    shows them again forgets them. Missing for NODE_LOST_AFTER_S = lost. After a Redis restart
 *    every node writes itself again within a heartbeat (registry replay), so it is never judged;
 * 3. for each active conversation of a lost node (at most `batchSize` per pass): its live carrier
 *    call is ended through the telephony domain (removed from the registry, which frees the seat
 *    and the campaign slot; hung up through the carrier REST API; `ended` event once), its
 *    session is forgotten, then the row becomes `failed` with `metadata.end_reason = 'node_lost'`
 *    (turns already written stay). That status change fires the post-call trigger exactly once,
 *    so the call gets its `call.completed` (status `abandoned`), summary decision and billing.
 *
 * The same pass is the crash repair: a restarted single-node deployment (`ROLE=all`) has a new
 * node id, so the conversations its previous process left `active` are finalized within
 * NODE_LOST_AFTER_S of the first pass (queued at start). Calls are hung up, not moved: a carrier
 * stream cannot be re-pointed at another node without the caller hearing a new call anyway, and
 * a fresh session would lose the conversation's state (docs/operations.md says why).
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Registry } from '../../shared/registry/index.js';
import type { Sql } from '../../shared/db/client.js';
import type { JobContext, Jobs } from '../jobs/index.js';
import { recurringPass } from '../jobs/recurring.js';
import { NODE_LOST_REASON } from '../webhooks/events.js';

export interface NodeSweeperDeps {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  registry: Pick<Registry, 'nodes' | 'sessions'>;
  /** NODE_LOST_AFTER_S in ms: how long a node must be missing from answered listings. */
  lostAfterMs: number;
  /** Seconds between passes. Default 2. */
  intervalS?: number;
  /** Conversations finalized per pass. Default 500. */
  batchSize?: number;
  /** Ends a live carrier call of a lost node (telephony domain); false when it was not live. */
  endLostCall: (callId: string, reason: string) => Promise<boolean>;
}

export interface SweepResult {
  /** Nodes judged lost in this pass. */
  lostNodes: string[];
  /** Conversations finalized with `node_lost`. */
  finalized: number;
  /** Live carrier calls ended. */
  callsEnded: number;
}

export interface NodeSweeper {
  /** Queues a pass now (refused by the key if one is queued). */
  kick(): Promise<void>;
  /** One pass at `clock.now()`. */
  sweep(): Promise<SweepResult>;
  run(job: JobContext<'ops.node-sweep'>): Promise<void>;
}

const KEY = 'nodes';

interface LostRow {
  id: string;
  session_id: string;
  call_id: string | null;
  engine_node_id: string;
}

export function createNodeSweeper(deps: NodeSweeperDeps): NodeSweeper {
  const { sql, jobs, clock, logger, registry } = deps;
  const intervalS = deps.intervalS ?? 2;
  const batchSize = deps.batchSize ?? 500;
  const none: SweepResult = { lostNodes: [], finalized: 0, callsEnded: 0 };

  /** Nodes missing long enough; updates the watch from this listing. */
  async function lostNodes(live: string[], now: Date): Promise<string[]> {
    const owners = (await sql<{ node: string }[]>`
      select distinct engine_node_id as node from conversations
      where status = 'active' and engine_node_id is not null`).map((r) => r.node);
    const liveSet = new Set(live);
    const missing = owners.filter((n) => !liveSet.has(n));
    // Forget nodes seen again, and nodes with nothing left to finalize.
    await sql`delete from engine_node_watch where node_id <> all(${sql.array(missing)}::text[])`;
    if (!missing.length) return [];
    await sql`
      insert into engine_node_watch (node_id, missing_since)
      select n, ${now} from unnest(${sql.array(missing)}::text[]) as n
      on conflict (node_id) do nothing`;
    const cutoff = new Date(now.getTime() - deps.lostAfterMs);
    return (await sql<{ node_id: string }[]>`
      select node_id from engine_node_watch where node_id = any(${sql.array(missing)}::text[]) and missing_since <= ${cutoff}`).map((r) => r.node_id);
  }

  async function sweep(): Promise<SweepResult> {
    let live: string[];
    try {
      live = (await registry.nodes.listNodes()).map((n) => n.nodeId);
    } catch (err) {
      logger.warn({ err }, 'node sweep skipped: the registry did not answer (nothing is judged lost)');
      return none;
    }
    const now = new Date(clock.now());
    const lost = await lostNodes(live, now);
    if (!lost.length) return none;
    const rows = await sql<LostRow[]>`
      select id, session_id, call_id, engine_node_id from conversations
      where status = 'active' and engine_node_id = any(${sql.array(lost)}::text[])
      order by started_at limit ${batchSize}`;
    let callsEnded = 0;
    const done: string[] = [];
    for (const r of rows) {
      try {
        // The live call first: if this fails (registry blip) the row stays active and the next pass retries.
        if (r.call_id && (await deps.endLostCall(r.call_id, NODE_LOST_REASON))) callsEnded++;
        await registry.sessions.deleteSession(r.session_id);
        done.push(r.id);
      } catch (err) {
        logger.warn({ err, conversationId: r.id }, 'node sweep: could not end a lost call yet; retried next pass');
      }
    }
    const finalized = done.length
      ? await sql`
          update conversations c set status = 'failed', ended_at = ${now}, updated_at = ${now},
            metadata = c.metadata || ${sql.json({ end_reason: NODE_LOST_REASON })},
            -- The engine's own totals died with it: what its written turns show (a lower bound:
            -- up to the last message that reached Postgres), never the zeros of a start row.
            total_turns = greatest(c.total_turns, t.turns),
            total_duration_ms = greatest(c.total_duration_ms, t.duration_ms),
            avg_response_latency_ms = case when c.avg_response_latency_ms > 0 then c.avg_response_latency_ms else t.latency_ms end
          from (
            select v.id,
              (select count(distinct m.turn_number) from messages m where m.conversation_id = v.id and m.role = 'user' and m.turn_number > 0)::int as turns,
              coalesce((select (extract(epoch from max(m.created_at) - v.started_at) * 1000)::int from messages m where m.conversation_id = v.id), 0) as duration_ms,
              coalesce((select avg(m.total_latency_ms)::int from messages m where m.conversation_id = v.id and m.role = 'assistant' and m.total_latency_ms > 0), 0) as latency_ms
            from conversations v where v.id = any(${sql.array(done)}::uuid[])
          ) t
          where c.id = t.id and c.status = 'active'
          returning c.id`
      : [];
    logger.warn({ lostNodes: lost, finalized: finalized.length, callsEnded }, 'engine node lost: its calls were finalized with node_lost');
    return { lostNodes: lost, finalized: finalized.length, callsEnded };
  }

  // Passes 2 s apart: a failed one is retried by the next.
  const recurring = recurringPass({ jobs, logger, name: 'ops.node-sweep', data: { tick: KEY }, intervalS, pass: sweep, onError: 'next-pass' });
  return { kick: recurring.kick, sweep, run: recurring.run };
}
