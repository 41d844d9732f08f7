/**
 * Start pre-flight: can this campaign's agent place outbound calls at all? Every contact's dial
 * would be refused alike by the outbound path (telephony/outbound.ts, voice/build-config.ts) when
 * the agent's published version dials inbound only, lacks a provider, has a flow that cannot run,
 * or has no caller ID. Starting such a campaign used to spend its whole list in milliseconds (each
 * contact `failed` with an attempt counted), so start refuses it instead, naming the problem.
 *
 * It reads the published snapshot itself (the campaigns domain has no live-config resolver, and
 * needs no decrypted secret for these checks). The dialer still handles a refusal the agent earns
 * after the start (dialer.ts, a 4xx of the dial path that is not about the contact): the campaign is paused, nobody failed.
 */
import { invalid, type AppError } from '../../shared/errors.js';
import type { Sql } from '../../shared/db/client.js';
import { liveRow } from '../agents/versions/store.js';
import { resolveFlow } from '../voice/flow-config.js';

const PROVIDER_KINDS = ['asr', 'llm', 'tts'] as const;

/** Why `agentId` cannot place this campaign's calls (400 naming `agent_id` or `from_number`), or undefined. */
export async function outboundProblem(sql: Sql, agentId: string | null, fromNumber: string): Promise<AppError | undefined> {
  const bad = (problem: string) => invalid('agent_id', `the agent cannot place outbound calls: ${problem}`);
  if (!agentId) return bad('it was deleted');
  const row = await liveRow(sql, agentId);
  if (!row) return bad('it was deleted');
  const s = row.snapshot;
  if (row.live_version === null || !s) return bad(`it has no published version (publish it: POST /agents/${agentId}/versions/publish)`);
  if (s.agent.is_active === false) return bad('its published version is inactive (set is_active true, then publish)');
  // The outbound path's own rule: no telephony binding means both directions.
  if ((s.telephony?.call_direction ?? 'both') === 'inbound') return bad('its published call_direction is inbound (set it to outbound or both, then publish)');
  const missing = PROVIDER_KINDS.filter((k) => !s.providers.some((p) => p.provider_type === k && p.provider_name.trim() !== ''));
  if (missing.length) return bad(`its published version has no ${missing.join(', ')} provider (add it, then publish)`);
  if (s.agent.mode === 'flow') {
    const flow = resolveFlow(s.flow);
    if ('problem' in flow) return bad(flow.problem);
  }
  if (!fromNumber && !s.telephony?.carrier_phone_number) {
    return invalid('from_number', 'no caller ID: set from_number or attach (and publish) a phone number on the agent');
  }
  return undefined;
}
