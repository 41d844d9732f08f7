/**
 * The static capability map of `GET /voice/capabilities`. Provider names come from the engine's
 * provider registry so the two cannot drift.
 */
import { SUPPORTED_PROVIDER_NAMES } from '../../shared/providers/registry.js';
import { CALL_DIRECTIONS, KB_MODES, WELCOME_MODES } from './build-config.js';

/** A started session waits this long for its socket, then its config is purged (spec Limits). */
export const CONNECT_WINDOW_MS = 30_000;
/** Longest text accepted by the text-injection route. */
export const MAX_TEXT_CHARS = 4000;

export const SUPPORTED_PROVIDERS = SUPPORTED_PROVIDER_NAMES;

/** Server-to-client JSON event types on the browser socket (spec "Events"). */
export const VOICE_EVENTS = [
  'pipeline_ready',
  'user_started_speaking',
  'interim_transcription',
  'transcription',
  'llm_start',
  'llm_step_start',
  'llm_chunk',
  'llm_end',
  'llm_error',
  'tool_calls_started',
  'tool_call_in_progress',
  'tool_call_result',
  'tts_audio_start',
  'tts_complete',
  'tts_retry',
  'tts_retry_exhausted',
  'turn_complete',
  'phase_idle',
  'idle_check',
  'idle_disconnect',
  'call_ended',
  'error',
  // Addition (issue 19): flow agents only.
  'flow_node_entered',
] as const;

export function voiceCapabilities() {
  return {
    transports: [
      { name: 'browser', path: '/api/v1/voice/ws/{session_id}', encoding: 'pcm_s16le', sampleRateHz: 16_000, channels: 1, events: true },
      { name: 'twilio', path: '/api/v1/voice/ws/twilio/{callSid}', encoding: 'mulaw', sampleRateHz: 8000, channels: 1, events: false },
    ],
    events: [...VOICE_EVENTS],
    clientMessages: ['playback_done', 'text_inject'],
    providers: { asr: [...SUPPORTED_PROVIDERS.asr], llm: [...SUPPORTED_PROVIDERS.llm], tts: [...SUPPORTED_PROVIDERS.tts] },
    welcomeModes: [...WELCOME_MODES],
    kbModes: [...KB_MODES],
    callDirections: [...CALL_DIRECTIONS],
    socketProfiles: ['browser_headset', 'browser_speakers'],
    connectWindowMs: CONNECT_WINDOW_MS,
    maxTextChars: MAX_TEXT_CHARS,
    minAudioFrameBytes: 10,
  };
}
