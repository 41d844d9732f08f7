/**
 * REST routes of telephony (raw JSON family, no envelope). Carrier webhooks are forms: their
 * PascalCase keys are mapped onto the proto fields and the whole form is kept in `form.params`
 * for the signature check. TwiML routes answer the response's `body` as text/xml.
 */
import { TelephonyService } from '../../shared/gen/voiceplane/v1/telephony_pb.js';
import type { RestRequestParts, RestRoute } from '../http/rest.js';

const T = '/api/v1/telephony';

const raw = (method: RestRoute['method'], path: string, rpc: string, extra: Partial<RestRoute> = {}): RestRoute => ({
  method,
  path: `${T}${path}`,
  service: TelephonyService,
  rpc,
  family: 'raw',
  ...extra,
});

type Form = Record<string, string>;

/** A carrier form route: `map` picks the named fields; path params win (`call_id`). */
function form(map: (f: Form, parts: RestRequestParts) => Record<string, unknown>, extra: Partial<RestRoute> = {}): Partial<RestRoute> {
  return {
    bodyType: 'form',
    request: (parts) => {
      const f: Form = {};
      const body = parts.body && typeof parts.body === 'object' ? (parts.body as Record<string, unknown>) : {};
      for (const [k, v] of Object.entries(body)) f[k] = String(v);
      return { ...map(f, parts), ...parts.params, form: { params: f } };
    },
    ...extra,
  };
}

const TWIML = { contentType: 'text/xml' } as const;

/** A carrier webhook kept as received: raw body, its content type, path params, `hold`. */
function carrierHook(extra: Partial<RestRoute>): Partial<RestRoute> {
  return {
    bodyType: 'text',
    request: (parts) => ({
      raw_body: typeof parts.body === 'string' ? parts.body : '',
      content_type: parts.headers.get('content-type') ?? '',
      hold: Number(first(parts.query.hold)) || 0,
      ...parts.params,
    }),
    ...extra,
  };
}
const first = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));
function queryForm(q: Record<string, string | string[] | undefined>): string {
  const f = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) f.append(k, x);
  return f.toString();
}

export const telephonyRoutes: RestRoute[] = [
  raw(
    'POST',
    '/calls/inbound',
    'inboundCall',
    form((f, parts) => ({ call_sid: f.CallSid ?? '', from: f.From ?? '', to: f.To ?? '', account_sid: f.AccountSid ?? '', hold: Number(first(parts.query.hold)) || 0 }), TWIML),
  ),
  raw('POST', '/calls/outbound', 'placeOutboundCall'),
  raw('GET', '/calls', 'listCalls'),
  raw('GET', '/calls/:call_id', 'getCall'),
  raw('POST', '/calls/:call_id/end', 'endCall', { bodyType: 'none' }),
  raw('POST', '/calls/:call_id/transfer', 'transferCall'),
  raw(
    'POST',
    '/calls/:call_id/status',
    'callStatusCallback',
    form((f) => ({ call_status: f.CallStatus ?? '', call_duration: f.CallDuration ?? '', call_sid: f.CallSid ?? '', sequence_number: f.SequenceNumber ?? '' })),
  ),
  raw(
    'POST',
    '/calls/:call_id/recording',
    'recordingCallback',
    form((f) => ({ recording_url: f.RecordingUrl ?? '', recording_sid: f.RecordingSid ?? '', recording_duration: f.RecordingDuration ?? '', recording_status: f.RecordingStatus ?? '' })),
  ),
  raw('POST', '/calls/:call_id/amd', 'amdCallback', form((f) => ({ answered_by: f.AnsweredBy ?? '', call_sid: f.CallSid ?? '', machine_detection_duration: f.MachineDetectionDuration ?? '' }))),
  raw('POST', '/calls/:call_id/dial-complete', 'dialComplete', form((f) => ({ dial_call_status: f.DialCallStatus ?? '' }), TWIML)),
  // Other carriers (issue 24): the body is kept as received (signatures), the adapter parses it.
  raw('POST', '/calls/inbound/:carrier', 'carrierInbound', carrierHook(TWIML)),
  // Exotel's Voicebot applet may fetch its dynamic URL with GET: the query is the webhook's form.
  raw('GET', '/calls/inbound/:carrier', 'carrierInbound', {
    bodyType: 'none',
    request: (parts) => ({ raw_body: queryForm(parts.query), content_type: 'application/x-www-form-urlencoded', hold: Number(first(parts.query.hold)) || 0, ...parts.params }),
    ...TWIML,
  }),
  raw('POST', '/calls/:call_id/events/:carrier', 'carrierEvent', carrierHook({ contentType: 'application/json' })),
  raw('GET', '/providers', 'listProviders'),
  raw('GET', '/capabilities', 'capabilities'),
];
