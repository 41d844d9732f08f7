/**
 * Every background job the control plane runs, with its payload type: the one place a job name is
 * spelled. Payloads stay small (ids, never rows): handlers re-read the current state, which is what
 * makes a re-run after a crash safe (at-least-once, see docs/adr/0003-job-queue.md).
 */
export interface JobPayloads {
  /** Post-call summary of one conversation (whether one is wanted is read from the row and the agent). */
  'post-call.summary': { conversation_id: string };
  /**
   * Post-call analysis of one completed conversation against one active schema of its agent
   * (control-plane/analysis): a job per schema, so one job is one bounded ask. Without
   * `schema_id` (queued by an earlier release): every active schema.
   */
  'analysis.extract': { conversation_id: string; schema_id?: string };
  /** QA scoring of one completed conversation against its agent's active rubric (control-plane/qa; its `pending` row exists). */
  'qa.score': { conversation_id: string };
  /** One delivery attempt of a stored webhook delivery (the body lives on the row, built once). */
  'webhook.deliver': { delivery_id: string };
  /** Builds the `call.completed` event of one carrier call once its analysis hold is over. */
  'webhook.call-completed': { call_key: string };
  /**
   * A carrier call that never connected (busy, no answer, rejected), or was answered but whose
   * media never reached an engine (`answered_at_ms` set: sent only if no conversation of the call
   * exists when it runs): no conversation exists, so the payload carries the call's facts (its
   * registry record is gone once it ended).
   */
  'webhook.call-failed': {
    call_id: string;
    workspace_id: string;
    agent_id: string;
    direction: string;
    from_number: string;
    to_number: string;
    carrier_status: string;
    created_at_ms: number;
    ended_at_ms: number;
    answered_at_ms?: number;
  };
  /**
   * The dial loop of one campaign for a slice of time (control-plane/campaigns/dialer.ts); it
   * queues its own successor while the campaign can still dial.
   */
  'campaign.dial': {
    campaign_id: string;
    /** Carrier failures in a row when the previous slice ended: the backoff goes on across slices. */
    carrier_failures?: number;
  };
  /**
   * Whether an answered campaign call reached an engine, once its conversation would be recorded
   * (control-plane/campaigns/media-check.ts): a `completed` contact without one becomes `failed`.
   */
  'campaign.media-check': { call_id: string };
  /**
   * Copies the engine nodes' registry health into `system_health` and prunes old rows
   * (control-plane/system-analytics/reporter.ts); one key for the deployment, so one at a time.
   */
  'system-health.collect': Record<string, never>;
  /**
   * One evaluation tick of every enabled alert rule (control-plane/alerts/evaluator.ts). One key
   * for the whole deployment, so the `stately` policy runs one tick at a time across replicas;
   * each tick queues its successor first.
   */
  'alerts.evaluate': { tick: 'alerts' };
  /** One alert notification (email, webhook or Slack) stored with its body (control-plane/alerts/notify.ts). */
  'alerts.notify': { notification_id: string };
  /**
   * Publishes a workspace's credit state into the registry after its balance changed (or every
   * workspace's, without `workspace_id`, after a price change); control-plane/billing.
   */
  'billing.publish': { workspace_id?: string };
  /** Runs the cases of one simulation test run (control-plane/simtests/runner.ts); re-queued while the workspace is at its limit. */
  'simtests.run': { run_id: string };
  /** Fails a running test run whose worker stopped heartbeating; re-queues itself until the run has finished (control-plane/simtests/runner.ts). */
  'simtests.watchdog': { run_id: string };
  /**
   * One pass of the node sweeper (control-plane/ops/node-sweeper.ts): conversations and live
   * calls of engine nodes gone from the registry are finalized with `node_lost`. One key for the
   * deployment, so one pass at a time across replicas; each pass queues its successor first.
   */
  'ops.node-sweep': { tick: 'nodes' };
  /** One presence pass (control-plane/portal/sweep.ts): stale sockets offline, missed shifts, long breaks. */
  'portal.presence-sweep': { tick: 'presence' };
  /** An engine asked to hand a carrier call to a portal agent (control-plane/portal/handoff.ts); keyed by call. */
  'portal.handoff': { call_id: string };
  /** Transcribes the recording of one hand-off's human segment (control-plane/portal/transcribe.ts); keyed by hand-off. */
  'portal.transcribe': { handoff_id: string };
  /**
   * The deadline of one spoken step (refusal, hold round) of an inbound call on an event carrier
   * (control-plane/telephony/inbound-deadline.ts): hangs the call up if the carrier still holds
   * the step's `state`. No registry record exists for such a call, so the payload names it.
   */
  'telephony.step-deadline': { carrier: string; call_sid: string; agent_id: string; state: string };
  /** A carrier call whose media ended on its engine: ended as `session_ended` unless something else ended it (shared/voice/media-ended.ts). */
  'telephony.media-ended': { call_id: string };
}

export type JobName = keyof JobPayloads;
