/**
 * REST routes of the webhooks domain (spec doc 3, "Webhook"; envelope family). Static segments
 * win over parameters (`/deliveries/:id/retry` is longer than `/deliveries/:id`).
 */
import { WebhookService } from '../../shared/gen/voiceplane/v1/webhooks_pb.js';
import type { RestRoute } from '../http/rest.js';
import { withNulls } from '../http/envelope.js';

const C = '/api/v1/call-center';
const S = WebhookService;

/**
 * A row of the delivery log is a summary: the attempt count and the last outcome
 * (`last_status_code`, `last_error`), without `attempt_log` and `body`, which only the
 * single-delivery read carries (spec: "A single-delivery read includes every attempt"). The proto
 * field is a list, so the empty one is left out rather than shown as `[]` next to `attempts: 3`.
 */
function logRow(row: Record<string, unknown>): Record<string, unknown> {
  const out = delivery(row);
  delete out.attempt_log;
  delete out.body;
  return out;
}

/** The fields docs/webhooks.md lists on every row: an unset one is null, not missing. */
const NULLABLE = ['call_id', 'next_attempt_at', 'last_status_code', 'last_error', 'delivered_at'];
const delivery = (row: Record<string, unknown>) => withNulls(row, NULLABLE);
/** Likewise every attempt's fields (an attempt without an answer has no status code or excerpt). */
const ATTEMPT_NULLABLE = ['status_code', 'error', 'response_excerpt'];
const fullDelivery = (json: Record<string, unknown>) => ({ data: { ...delivery(json), attempt_log: ((json.attempt_log ?? []) as Record<string, unknown>[]).map((a) => withNulls(a, ATTEMPT_NULLABLE)) } });

export const webhookRoutes: RestRoute[] = [
  { method: 'GET', path: `${C}/settings`, service: S, rpc: 'getWebhookSettings' },
  { method: 'PUT', path: `${C}/settings`, service: S, rpc: 'putWebhookSettings' },
  { method: 'POST', path: `${C}/webhooks/test`, service: S, rpc: 'sendTestWebhook', status: 202 },
  {
    method: 'GET',
    path: `${C}/webhooks/deliveries`,
    service: S,
    rpc: 'listWebhookDeliveries',
    response: (json) => ({ data: (json.deliveries as Record<string, unknown>[]).map(logRow), meta: json.meta }),
  },
  {
    method: 'GET',
    path: `${C}/webhooks/deliveries/:id`,
    service: S,
    rpc: 'getWebhookDelivery',
    response: fullDelivery,
  },
  // The same delivery shape as GET: unset fields null, not absent.
  { method: 'POST', path: `${C}/webhooks/deliveries/:id/retry`, service: S, rpc: 'retryWebhookDelivery', status: 202, response: fullDelivery },
];
