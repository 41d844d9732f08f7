/**
 * Rows -> proto inits, and the REST shaping of absent optionals: proto3 JSON leaves an unset
 * optional out, while the spec's campaign shows `schedule_start`, `started_at`, ... as `null`.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { CampaignContactSchema, CampaignSchema } from '../../shared/gen/voiceplane/v1/campaigns_pb.js';
import { isoTime } from '../../shared/iso-time.js';
import type { CampaignRow, ContactRow, Counters } from './store.js';
import { withNulls } from '../http/envelope.js';

const iso = (d: Date | null | undefined): string | undefined => (d ? isoTime(d.getTime()) : undefined);
const opt = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

export function campaignView(c: CampaignRow, n: Counters): MessageInitShape<typeof CampaignSchema> {
  const cfg = c.config;
  return {
    id: c.id,
    userId: c.user_id,
    // Empty once the agent was deleted (a finished campaign keeps its history): null over REST.
    agentId: c.agent_id ?? '',
    workspaceId: c.workspace_id,
    name: c.name,
    status: c.status,
    totalCalls: n.total_calls,
    completedCalls: n.completed_calls,
    failedCalls: n.failed_calls,
    answeredCalls: n.answered_calls,
    config: {
      pacingPerMinute: cfg.pacing_per_minute,
      maxConcurrentCalls: cfg.max_concurrent_calls,
      maxRetries: cfg.max_retries,
      fromNumber: cfg.from_number,
      scheduleStart: opt(cfg.schedule_start),
      callingHoursStart: opt(cfg.calling_hours_start),
      callingHoursEnd: opt(cfg.calling_hours_end),
      timezone: opt(cfg.timezone),
    },
    columnMap: c.column_map,
    createdAt: isoTime(c.created_at.getTime()),
    startedAt: iso(c.started_at),
    completedAt: iso(c.completed_at),
    updatedAt: isoTime(c.updated_at.getTime()),
    statusReason: opt(c.status_reason),
  };
}

export function contactView(r: ContactRow): MessageInitShape<typeof CampaignContactSchema> {
  return {
    id: r.id,
    campaignId: r.campaign_id,
    toNumber: r.to_number,
    dynamicVariables: r.dynamic_variables,
    status: r.status,
    callId: opt(r.call_id),
    conversationId: opt(r.conversation_id),
    attempts: r.attempts,
    scheduledAt: iso(r.scheduled_at),
    dialedAt: iso(r.dialed_at),
    completedAt: iso(r.completed_at),
    durationSeconds: opt(r.duration_seconds),
    errorMessage: opt(r.error_message),
    amdVerdict: opt(r.amd_verdict),
  };
}

const CAMPAIGN_NULLABLE = ['started_at', 'completed_at', 'status_reason'];
const CONFIG_NULLABLE = ['schedule_start', 'calling_hours_start', 'calling_hours_end', 'timezone'];
const CONTACT_NULLABLE = ['call_id', 'conversation_id', 'scheduled_at', 'dialed_at', 'completed_at', 'duration_seconds', 'error_message', 'amd_verdict'];

/** REST JSON of a campaign: absent optionals as `null` (spec field table). */
export function restCampaign(json: unknown): Record<string, unknown> {
  const c = withNulls(json as Record<string, unknown>, CAMPAIGN_NULLABLE);
  // proto3 has no null string: the deleted agent's empty id is `null` in the REST shape.
  if (c.agent_id === '') c.agent_id = null;
  c.config = withNulls((c.config ?? {}) as Record<string, unknown>, CONFIG_NULLABLE);
  return c;
}

export function restContact(json: unknown): Record<string, unknown> {
  return withNulls(json as Record<string, unknown>, CONTACT_NULLABLE);
}
