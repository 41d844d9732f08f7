/**
 * The call's ASR stream: opened at call start (or adopted when pre-warmed) in the format the
 * transport delivers, and read to the end into the actor's mailbox, so recognition results are
 * ordered with everything else the call receives.
 */
import { redactSecrets } from '../../shared/providers/redact.js';
import type { AsrStream } from '../../shared/providers/types.js';
import { providerKeys } from '../../shared/voice/session-config.js';
import type { CallActorDeps } from './actor-deps.js';
import type { CallMsg } from './messages.js';

export function openAsr(d: CallActorDeps, post: (msg: CallMsg) => void): AsrStream {
  const c = d.config;
  const input = d.asrInput ?? { encoding: 'linear16', sampleRateHz: d.transport.inRateHz };
  const stream = d.asrStream ?? d.providers.asr.stream({ ...input, language: c.language, model: c.providers.asr.model_name });
  void pump(stream, post, providerKeys(c));
  return stream;
}

async function pump(stream: AsrStream, post: (msg: CallMsg) => void, keys: readonly string[]): Promise<void> {
  try {
    for await (const event of stream) post({ kind: 'asr', event });
    post({ kind: 'asr_closed' });
  } catch (err) {
    post({ kind: 'asr_closed', error: redactSecrets((err as Error).message, keys) });
  }
}
