import { VoiceService } from '../../shared/gen/voiceplane/v1/voice_pb.js';
import { AppError, invalid } from '../../shared/errors.js';
import type { RestRequestParts, RestRoute } from '../http/rest.js';
import { checkBodyShape } from '../http/body-shape.js';

const raw = (method: RestRoute['method'], path: string, rpc: string, extra: Partial<RestRoute> = {}): RestRoute => ({
  method,
  path,
  service: VoiceService,
  rpc,
  family: 'raw',
  ...extra,
});

/** Object-typed fields of the start request (proto Struct): checked here so the 400 names the field. */
const OBJECT_FIELDS = ['dynamic_variables', 'session_metadata'] as const;

/** The start body as JSON; the proto decoder reports other type errors by field name itself. */
export function startRequestJson(parts: RestRequestParts): unknown {
  // No body is an empty request; a JSON `null` body is not an object (it read as one).
  const body = parts.body === undefined ? {} : parts.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('INVALID_BODY', 'request body must be a JSON object');
  for (const f of OBJECT_FIELDS) {
    const v = (body as Record<string, unknown>)[f];
    if (v !== undefined && v !== null && (typeof v !== 'object' || Array.isArray(v))) throw invalid(f, 'must be an object');
  }
  // Plain JSON types, as on every other REST body (`"5"` for max_turns is 400, not 5).
  checkBodyShape(VoiceService.method.startSession.input, body as Record<string, unknown>);
  return body;
}

/**
 * Voice routes: raw JSON, no credential checked (spec Authentication 2): the session id is the
 * credential. Path params win over body fields of the same name.
 */
export const voiceRoutes: RestRoute[] = [
  raw('POST', '/api/v1/voice/sessions/start', 'startSession', { request: startRequestJson }),
  raw('POST', '/api/v1/voice/sessions/:session_id/text', 'injectText'),
  raw('POST', '/api/v1/voice/sessions/:session_id/end', 'endSession'),
  raw('GET', '/api/v1/voice/capabilities', 'capabilities'),
  raw('GET', '/api/v1/voice/health', 'live'),
  raw('GET', '/api/v1/voice/healthz', 'live'),
  raw('GET', '/api/v1/voice/live', 'live'),
  raw('GET', '/api/v1/voice/ready', 'ready'),
];
