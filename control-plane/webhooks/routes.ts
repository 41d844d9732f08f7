/**
 * REST routes of the webhooks domain (spec doc 3, "Webhook"; envelope family). Static segments
 * win over parameters (`/deliveries/:id/retry` is longer than `/deliveries/:id`).
 */
import { WebhookService } from '../../shared/gen/voiceplane/v1/webhooks_pb.js';
import type { RestRoute } from '../http/rest.js';

const C = '/api/v1/call-center';
const S = WebhookService;

export const webhookRoutes: RestRoute[] = [
  { method: 'GET', path: `${C}/settings`, service: S, rpc: 'getWebhookSettings' },
  { method: 'PUT', path: `${C}/settings`, service: S, rpc: 'putWebhookSettings' },
  { method: 'POST', path: `${C}/webhooks/test`, service: S, rpc: 'sendTestWebhook', status: 202 },
  {
    method: 'GET',
    path: `${C}/webhooks/deliveries`,
    service: S,
    rpc: 'listWebhookDeliveries',
    response: (json) => ({ data: json.deliveries, meta: json.meta }),
  },
  { method: 'GET', path: `${C}/webhooks/deliveries/:id`, service: S, rpc: 'getWebhookDelivery' },
  { method: 'POST', path: `${C}/webhooks/deliveries/:id/retry`, service: S, rpc: 'retryWebhookDelivery', status: 202 },
];
