/**
 * Hand-off of a carrier call to a person (issue 21; docs/portal.md "Hand-off").
 *
 * Audio: a carrier conference, not PCM through the control plane. On accept the carrier dials the
 * person `human-<agent id>` (telephony `dialClient`: Twilio `<Dial><Client>`, a SIP endpoint on
 * SignalWire, Telnyx and Plivo, a Vonage app user: docs/telephony.md "Hand-off to a person"), which
 * stops the AI's media stream; the AI drops off (engine `end` command, reason `transferred`) and
 * the carrier bridges caller and person. A carrier that cannot (Exotel, or an account without an
 * address for people) is found out before anyone is offered the call: the caller hears the
 * fallback and the AI stays (`carrierRefusal`); a dial the carrier refuses at accept does the same.
 *
 * - `request`: the AI agent's PUBLISHED config must allow it (`allow_human_transfer` and telephony
 *   `human_transfer_mode: panel`). A free human agent of the workspace with a fresh heartbeat (and
 *   not one who already declined this call) is picked under a per-workspace advisory lock: fewer open offers and
 *   calls than its `max_concurrent_calls`, `available` or `on_call` with our calls, least loaded
 *   then longest in that status. It gets an `offered` row (OFFER_TTL_MS). Nobody free: a `no_agent` row and the spoken
 *   fallback text for the caller.
 * - The offer reaches the agent's presence socket through the registry's invalidation bus (every
 *   replica hears it; the one holding the socket sends it) and, because that bus is best effort,
 *   again on the agent's next heartbeat while it is still open (`pendingFor`).
 * - `accept` (socket `offer.accept`): the row becomes `accepted`, the agent `on_call`, and a human
 *   segment starts: a conversation row with the call's `call_id`, `segment_kind: human` and
 *   `metadata.human_agent_id/name` (what the folded list and `call.completed` read). With the AI
 *   agent's `transcribe_human_segment` on, the row is marked `transcription_status: pending`
 *   before the dial (transcribe.ts takes it from there).
 * - `decline` or expiry (the sweep): the next free agent is tried. `end` (socket `call.end`):
 *   the segment is completed (which queues the call's post-call work and webhook through the
 *   conversations trigger) and the agent goes to `wrap_up`.
 */
import type { Sql } from '../../shared/db/client.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { InvalidationBus } from '../../shared/registry/index.js';
import { newId } from '../../shared/ids.js';
import { conflict } from '../../shared/errors.js';
import type { Presence } from './presence.js';
import type { LiveAgentConfig } from '../agents/types.js';

export const OFFER_TTL_MS = 20_000;
export const OFFER_TOPIC = 'portal.offer';
export const FALLBACK_MESSAGE = 'Sorry, no one is available to take your call right now. Please try again later.';

export interface HandoffRequest {
  workspaceId: string;
  callId: string;
  sessionId: string;
  aiAgentId: string;
}

export type HandoffResult = { status: 'offered'; handoffId: string; humanAgentId: string } | { status: 'no_agent_available'; handoffId: string; fallbackMessage: string };

export interface Offer {
  offer_id: string;
  call_id: string;
  ai_agent: { id: string; name: string };
  expires_at: string;
}

interface HandoffRow {
  id: string;
  workspace_id: string;
  call_id: string;
  session_id: string;
  ai_agent_id: string;
  human_agent_id: string | null;
  status: string;
  conversation_id: string | null;
  offered_at: Date;
  expires_at: Date | null;
  answered_at: Date | null;
}

export interface HandoffDeps {
  sql: Sql;
  clock: Clock;
  logger: Logger;
  presence: Presence;
  bus: InvalidationBus;
  heartbeatTimeoutS: number;
  /** The AI agent's published configuration. */
  liveConfig(agentId: string): Promise<LiveAgentConfig>;
  /** The carrier dials person `identity`; the AI drops off. The carrier that dialed; undefined: the call cannot be handed over. */
  dialClient(callId: string, identity: string): Promise<string | undefined>;
  /** Why the call's carrier cannot hand it to a person (telephony); undefined when it can. */
  handOffRefusal(callId: string): Promise<string | undefined>;
  /** Hangs the carrier call up (a person ended a call handed to them); its `ended` event follows. Absent: the carrier ends it on its own. */
  hangUp?(callId: string): Promise<boolean>;
  /** The live session says `text` to the caller now (engine `say` command; the spoken fallback). */
  say(sessionId: string, text: string): Promise<void>;
}

/** The carrier client identity a human agent's portal registers. */
export const clientIdentity = (humanAgentId: string) => `human-${humanAgentId}`;

export function createHandoff(deps: HandoffDeps) {
  const { sql, clock, logger } = deps;
  const now = () => new Date(clock.now());

  /** Undefined when the AI agent's published config does not allow a panel hand-off (the reason instead). */
  async function refusal(aiAgentId: string): Promise<string | undefined> {
    const live = await deps.liveConfig(aiAgentId);
    if (!live.allow_human_transfer) return 'the agent does not allow human transfer (allow_human_transfer)';
    if (live.telephony?.human_transfer_mode !== 'panel') return 'the agent hands calls over by phone, not to the portal (human_transfer_mode is not panel)';
    return undefined;
  }

  async function request(r: HandoffRequest): Promise<HandoffResult> {
    return offerNext(r);
  }

  /** Undefined when the call's carrier can hand it to a person; else why not (nobody is offered it then). */
  async function carrierRefusal(callId: string): Promise<string | undefined> {
    const why = await deps.handOffRefusal(callId);
    return why && `the call cannot be handed to a person: ${why}`;
  }

  /** The caller hears that nobody can take the call; the AI stays on it. */
  async function fallback(callId: string, sessionId: string): Promise<void> {
    await deps.say(sessionId, FALLBACK_MESSAGE).catch((err: Error) => logger.warn({ err, callId }, 'fallback not spoken'));
  }

  /** Offers the call to the next free agent (one that has not declined or let it expire). */
  async function offerNext(r: HandoffRequest): Promise<HandoffResult> {
    const at = now();
    const res = await sql.begin(async (tx) => {
      // One pick at a time per workspace: a person takes up to N calls, so a row lock with `skip
      // locked` would hide a person another request is offering to (they may have room for both),
      // and `for update` alone would let both count the same load. The lock ends with the
      // transaction; under read committed the next pick's query sees the offer this one inserts.
      await tx`select pg_advisory_xact_lock(hashtextextended(${`handoff:${r.workspaceId}`}, 0))`;
      // Checked under the lock: concurrent requests for one call found it free outside it, and the
      // second insert failed the open-offer index (a 500).
      const [open] = await tx`select 1 from human_handoffs where call_id = ${r.callId} and status in ('offered', 'accepted') limit 1`;
      if (open) throw conflict('the call is already offered to or connected with a person');
      // `max_concurrent_calls`: a person holds up to N calls. Free: `available`, or `on_call` with
      // calls we connected (their own `on_call` without one is not free); fewer open offers and
      // calls than N. The least loaded first, then the longest in that status.
      const [human] = await tx<{ id: string }[]>`
        select h.id from human_agents h
        cross join lateral (select count(*)::int as open, count(*) filter (where o.status = 'accepted')::int as connected
          from human_handoffs o where o.human_agent_id = h.id and o.status in ('offered', 'accepted')) load
        where h.workspace_id = ${r.workspaceId} and h.is_active
          and (h.status = 'available' or (h.status = 'on_call' and load.connected > 0))
          and load.open < h.max_concurrent_calls
          and h.last_heartbeat_at >= ${new Date(at.getTime() - deps.heartbeatTimeoutS * 1000)}
          and not exists (select 1 from human_handoffs o where o.call_id = ${r.callId} and o.human_agent_id = h.id and o.status in ('declined', 'expired'))
        order by load.open, h.status_changed_at, h.id
        limit 1`;
      const id = newId();
      if (!human) {
        await tx`insert into human_handoffs (id, workspace_id, call_id, session_id, ai_agent_id, status, offered_at)
          values (${id}, ${r.workspaceId}, ${r.callId}, ${r.sessionId}, ${r.aiAgentId}, 'no_agent', ${at})`;
        return { status: 'no_agent_available' as const, handoffId: id, fallbackMessage: FALLBACK_MESSAGE };
      }
      await tx`insert into human_handoffs (id, workspace_id, call_id, session_id, ai_agent_id, human_agent_id, status, offered_at, expires_at)
        values (${id}, ${r.workspaceId}, ${r.callId}, ${r.sessionId}, ${r.aiAgentId}, ${human.id}, 'offered', ${at}, ${new Date(at.getTime() + OFFER_TTL_MS)})`;
      return { status: 'offered' as const, handoffId: id, humanAgentId: human.id };
    });
    if (res.status === 'offered') await deps.bus.publish(OFFER_TOPIC, res.handoffId);
    // Nobody free: the AI says so and stays on the call.
    else await fallback(r.callId, r.sessionId);
    logger.info({ callId: r.callId, status: res.status }, 'human hand-off');
    return res;
  }

  async function offerView(h: HandoffRow): Promise<Offer> {
    const [a] = await sql<{ name: string }[]>`select name from agents where id = ${h.ai_agent_id}`;
    return { offer_id: h.id, call_id: h.call_id, ai_agent: { id: h.ai_agent_id, name: a?.name ?? '' }, expires_at: h.expires_at!.toISOString() };
  }

  const toRequest = (h: HandoffRow): HandoffRequest => ({ workspaceId: h.workspace_id, callId: h.call_id, sessionId: h.session_id, aiAgentId: h.ai_agent_id });

  return {
    request,
    refusal,
    carrierRefusal,
    fallback,

    /** An offer is out or a person is connected for this call. */
    async isOpen(callId: string): Promise<boolean> {
      return (await sql`select 1 from human_handoffs where call_id = ${callId} and status in ('offered', 'accepted') limit 1`).length > 0;
    },

    /** The offer for the bus notice `handoffId`, if still open, with the agent it is for. */
    async offerFor(handoffId: string): Promise<{ humanAgentId: string; offer: Offer } | undefined> {
      const [h] = await sql<HandoffRow[]>`select * from human_handoffs where id = ${handoffId} and status = 'offered' and expires_at > ${now()}`;
      return h?.human_agent_id ? { humanAgentId: h.human_agent_id, offer: await offerView(h) } : undefined;
    },

    /** Open offers of one agent (re-sent on heartbeats: the bus may have lost the notice). */
    async pendingFor(humanAgentId: string): Promise<Offer[]> {
      const rows = await sql<HandoffRow[]>`select * from human_handoffs where human_agent_id = ${humanAgentId} and status = 'offered' and expires_at > ${now()} limit 5`;
      return Promise.all(rows.map(offerView));
    },

    async accept(handoffId: string, humanAgentId: string, presenceSessionId: string): Promise<{ conversationId: string; callId: string } | { error: string } | undefined> {
      const at = now();
      const [offered] = await sql<HandoffRow[]>`select * from human_handoffs where id = ${handoffId} and human_agent_id = ${humanAgentId} and status = 'offered'`;
      if (!offered) return undefined;
      // Asked before the dial: the leg (and its recording) can end as soon as the carrier connects it (transcribe.ts).
      const transcribe = (await deps.liveConfig(offered.ai_agent_id).catch(() => undefined))?.telephony?.transcribe_human_segment === true;
      const [h] = await sql<HandoffRow[]>`
        update human_handoffs set status = 'accepted', answered_at = ${at}, transcription_status = ${transcribe ? 'pending' : null}
        where id = ${handoffId} and human_agent_id = ${humanAgentId} and status = 'offered' and expires_at > ${at} returning *`;
      if (!h) return undefined;
      // The carrier first: a segment exists only once the person is really being connected.
      const carrier = await deps.dialClient(h.call_id, clientIdentity(humanAgentId));
      if (!carrier) {
        await sql`update human_handoffs set status = 'ended', ended_at = ${now()}, transcription_status = null where id = ${h.id}`;
        // The AI is still on the call (it only drops off once the carrier dials): the caller hears why nobody comes.
        await fallback(h.call_id, h.session_id);
        return { error: 'the call could not be handed over (it ended or the carrier refused)' };
      }
      const [human] = await sql<{ display_name: string }[]>`select display_name from human_agents where id = ${humanAgentId}`;
      const conversationId = newId();
      const started = now();
      await sql.begin(async (tx) => {
        // The transcription may already have failed (a leg that ended at once): the row says.
        const [t] = await tx<{ transcription_status: string | null; transcription_error: string | null }[]>`
          select transcription_status, transcription_error from human_handoffs where id = ${h.id} for update`;
        const meta: Record<string, unknown> = { human_agent_id: humanAgentId, human_agent_name: human?.display_name ?? '', handoff_id: h.id };
        if (t?.transcription_status) meta.transcription_status = t.transcription_status;
        if (t?.transcription_error && t.transcription_status === 'failed') meta.transcription_error = t.transcription_error;
        await tx`
          insert into conversations (id, session_id, agent_id, workspace_id, call_id, segment_kind, status, metadata, started_at, created_at, updated_at)
          values (${conversationId}, ${`human:${h.id}`}, ${h.ai_agent_id}, ${h.workspace_id}, ${h.call_id}, 'human', 'active',
            ${tx.json(meta as never)}, ${started}, ${started}, ${started})`;
        // The carrier: which carrier's callback may name the person's leg's recording (transcribe.ts `awaiting`).
        await tx`update human_handoffs set conversation_id = ${conversationId}, carrier = coalesce(carrier, ${carrier}) where id = ${h.id}`;
      });
      await deps.presence.setStatus(humanAgentId, presenceSessionId, 'on_call', 'handoff', { call_id: h.call_id });
      return { conversationId, callId: h.call_id };
    },

    /** Declined: the next free agent gets the call (or the caller the fallback). */
    async decline(handoffId: string, humanAgentId: string): Promise<HandoffResult | undefined> {
      const [h] = await sql<HandoffRow[]>`
        update human_handoffs set status = 'declined', answered_at = ${now()} where id = ${handoffId} and human_agent_id = ${humanAgentId} and status = 'offered' returning *`;
      return h ? offerNext(toRequest(h)) : undefined;
    },

    /**
     * The person's stint is over (`call.end` from the portal, or the carrier ended the call): the
     * segment completes (its post-call work and the call's webhook follow through the
     * conversations trigger) and the agent goes to `wrap_up`. `humanAgentId` undefined: any.
     */
    async end(callId: string, humanAgentId?: string): Promise<boolean> {
      const at = now();
      // The call itself ended (no person named): an offer still open is void, or its expiry would
      // offer the dead call to the next person.
      if (!humanAgentId) await sql`update human_handoffs set status = 'ended', ended_at = ${at} where call_id = ${callId} and status = 'offered'`;
      const rows = await sql<HandoffRow[]>`
        update human_handoffs set status = 'ended', ended_at = ${at}
        where call_id = ${callId} and status = 'accepted' and (${humanAgentId ?? null}::uuid is null or human_agent_id = ${humanAgentId ?? null}) returning *`;
      // The person ended it (`call.end`): the carrier call ends too, or caller and person stayed
      // connected after the record (and `call.completed`) said the call was over.
      if (humanAgentId && rows.length && deps.hangUp) await deps.hangUp(callId).catch((err: Error) => logger.warn({ err, callId }, 'carrier hangup after call.end failed'));
      for (const h of rows) {
        await sql`
          update conversations set status = 'completed', ended_at = ${at}, updated_at = ${at},
            total_duration_ms = greatest(0, (extract(epoch from ${at}::timestamptz - started_at) * 1000)::bigint),
            metadata = metadata || ${sql.json({ end_reason: humanAgentId ? 'human_ended' : 'call_ended' } as never)}
          where id = ${h.conversation_id} and status = 'active'`;
        const [a] = await sql<{ presence_session_id: string | null; still: number }[]>`
          select presence_session_id, (select count(*)::int from human_handoffs o where o.human_agent_id = ${h.human_agent_id} and o.status = 'accepted') as still
          from human_agents where id = ${h.human_agent_id}`;
        // Still connected to another call (max_concurrent_calls > 1): stays `on_call`.
        if (a?.presence_session_id && a.still === 0) await deps.presence.setStatus(h.human_agent_id!, a.presence_session_id, 'wrap_up', 'handoff', { call_id: callId });
      }
      return rows.length > 0;
    },

    /** Sweep: offers past their time go to the next agent. */
    async expireOffers(): Promise<number> {
      const rows = await sql<HandoffRow[]>`
        update human_handoffs set status = 'expired' where status = 'offered' and expires_at <= ${now()} returning *`;
      for (const h of rows) await offerNext(toRequest(h));
      return rows.length;
    },
  };
}

export type Handoff = ReturnType<typeof createHandoff>;
