/**
 * Delivery signing (spec doc 3, "Events"): `v1` is the hex HMAC-SHA256, keyed by the workspace
 * secret, over `<Webhook-Timestamp>.<raw body bytes>`. The body is the stored bytes of the
 * delivery (built once); only the timestamp and signature change between attempts.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const EVENT_TYPE = 'call.completed';

/** A new workspace secret: `whsec_` + 256 random bits (recognisable in logs and secret scanners). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function signatureV1(secret: string, timestampS: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestampS}.`).update(Buffer.from(body, 'utf8')).digest('hex');
}

/**
 * Every header of one attempt (spec doc 3, "call.completed delivery"). Alert notifications
 * (control-plane/alerts) are signed the same way under their own event type.
 */
export function deliveryHeaders(secret: string, eventId: string, timestampS: number, body: string, eventType: string = EVENT_TYPE): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'voiceplane-webhooks/1',
    'webhook-signature': `t=${timestampS},v1=${signatureV1(secret, timestampS, body)}`,
    'webhook-timestamp': String(timestampS),
    'webhook-id': eventId,
    'idempotency-key': eventId,
    'webhook-event-type': eventType,
  };
}
